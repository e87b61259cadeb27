"""The audit log's proofs, verified independently of the Rust implementation.

Written from the specifications `docs/audit-log.md` names: RFC 6962 hashing, inclusion and
consistency proofs verified as RFC 9162 §2.1.3.2 and §2.1.4.2 describe, C2SP signed notes,
tlog-checkpoint bodies and tlog-proof receipts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from .errors import ReceiptError
from .keys import KeyFormatError, VerifierKey, check_name, strict_b64decode

HASH_SIZE = 32
TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"
#: Deeper than any tree of 2^64 leaves: a longer path is refused before hashing it.
MAX_PROOF_HASHES = 64
#: Notes larger than this are refused unread (a checkpoint is a few hundred bytes).
MAX_NOTE_BYTES = 64 * 1024
MAX_SIGNATURES = 16


class ProofError(ReceiptError):
    """An inclusion or consistency proof that does not verify."""


def leaf_hash(entry: bytes) -> bytes:
    """RFC 6962: `SHA-256(0x00 || entry)`."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962: `SHA-256(0x01 || left || right)`."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _check_hashes(proof: Sequence[bytes], what: str) -> None:
    if len(proof) > MAX_PROOF_HASHES:
        raise ProofError(f"{what} has {len(proof)} hashes; at most {MAX_PROOF_HASHES} are possible")
    for i, h in enumerate(proof):
        if len(h) != HASH_SIZE:
            raise ProofError(f"{what} hash {i} is {len(h)} bytes, not {HASH_SIZE}")


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root an inclusion proof leads to (RFC 9162 §2.1.3.2), or ProofError."""
    if index < 0 or size <= 0 or index >= size:
        raise ProofError(f"leaf index {index} is outside a tree of size {size}")
    if len(leaf) != HASH_SIZE:
        raise ProofError(f"leaf hash is {len(leaf)} bytes, not {HASH_SIZE}")
    _check_hashes(proof, "inclusion proof")
    fn, sn = index, size - 1
    r = leaf
    for p in proof:
        if sn == 0:
            raise ProofError("inclusion proof is longer than the path to the root")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            # A node with no right sibling moves up without hashing until it is a right child.
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("inclusion proof is shorter than the path to the root")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    """Raises ProofError unless `leaf` is leaf `index` of the tree of `size` with `root`."""
    if len(root) != HASH_SIZE:
        raise ProofError(f"root is {len(root)} bytes, not {HASH_SIZE}")
    if root_from_inclusion(index, size, leaf, proof) != root:
        raise ProofError(f"inclusion proof of leaf {index} does not lead to the root of size {size}")


def verify_consistency(size1: int, size2: int, root1: bytes, root2: bytes, proof: Sequence[bytes]) -> None:
    """Raises ProofError unless the tree of `size2` extends the one of `size1` (RFC 9162 §2.1.4.2).

    A proof from size 0 is refused as meaningless: every tree extends the empty one.
    """
    if size1 < 0 or size2 < size1:
        raise ProofError(f"size {size2} cannot extend size {size1}")
    if size1 == size2:
        if proof:
            raise ProofError("trees of equal size need an empty proof")
        if root1 != root2:
            raise ProofError("trees of equal size have different roots")
        if size1 == 0:
            raise ProofError("a consistency proof between empty trees proves nothing")
        return
    if size1 == 0:
        raise ProofError("a consistency proof from the empty tree proves nothing")
    if not proof:
        raise ProofError("consistency proof is empty")
    if len(root1) != HASH_SIZE or len(root2) != HASH_SIZE:
        raise ProofError("a root is not 32 bytes")
    _check_hashes(proof, "consistency proof")
    path = list(proof)
    if size1 & (size1 - 1) == 0:
        # The old tree is a complete subtree: its root is the path's first node.
        path.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("consistency proof is longer than the path to the root")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("consistency proof is shorter than the path to the root")
    if fr != root1:
        raise ProofError(f"consistency proof does not lead to the root of size {size1}")
    if sr != root2:
        raise ProofError(f"consistency proof does not lead to the root of size {size2}")


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_id: int
    signature: bytes


@dataclass(frozen=True)
class SignedNote:
    """A C2SP signed note: the text (with its final newline) and its signature lines."""

    text: str
    signatures: list[NoteSignature]

    @classmethod
    def parse(cls, note: str) -> SignedNote:
        if len(note.encode("utf-8", errors="surrogatepass")) > MAX_NOTE_BYTES:
            raise ReceiptError("note is too large")
        if any(ord(c) < 0x20 and c != "\n" for c in note):
            raise ReceiptError("note contains a control character")
        if not note.endswith("\n"):
            raise ReceiptError("note does not end with a newline")
        split = note.rfind("\n\n")
        if split < 0:
            raise ReceiptError("note has no blank line before its signatures")
        text, block = note[: split + 1], note[split + 2 :]
        signatures = []
        for line in block[:-1].split("\n"):
            if not line.startswith("\u2014 "):
                raise ReceiptError(f"malformed signature line {line!r}")
            name, sep, data = line[2:].partition(" ")
            if not sep:
                raise ReceiptError(f"malformed signature line {line!r}")
            try:
                check_name(name)
                raw = strict_b64decode(data)
            except KeyFormatError as error:
                raise ReceiptError(f"signature by {name!r}: {error}") from error
            if len(raw) < 5:
                raise ReceiptError(f"signature by {name!r} is too short")
            signatures.append(NoteSignature(name, int.from_bytes(raw[:4], "big"), raw[4:]))
        if not signatures:
            raise ReceiptError("note has no signature")
        if len(signatures) > MAX_SIGNATURES:
            raise ReceiptError(f"note has more than {MAX_SIGNATURES} signatures")
        return cls(text=text, signatures=signatures)

    def verify(self, trusted: Sequence[VerifierKey]) -> VerifierKey:
        """The first trusted key that signed the note; ReceiptError when none did or one fails
        (see `signers`)."""
        return self.signers(trusted)[0]

    def signers(self, trusted: Sequence[VerifierKey]) -> list[VerifierKey]:
        """Every trusted key that signed the note; ReceiptError when none did or one fails.

        As the signed-note specification says: signatures by unknown keys are ignored, and a
        signature by a known key that does not verify rejects the whole note.
        """
        signers: list[VerifierKey] = []
        for sig in self.signatures:
            for key in trusted:
                if key.name == sig.name and key.key_id == sig.key_id:
                    if not key.verify(self.text.encode(), sig.signature):
                        raise ReceiptError(f"signature by {key.name}+{key.key_id:08x} does not verify")
                    if key not in signers:
                        signers.append(key)
        if not signers:
            raise ReceiptError("no signature by a trusted key")
        return signers


@dataclass(frozen=True)
class Checkpoint:
    """A tlog-checkpoint: origin, tree size, root hash (Airlock writes no extension lines)."""

    origin: str
    size: int
    root: bytes
    note: SignedNote

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        note = SignedNote.parse(text)
        lines = note.text[:-1].split("\n")
        if len(lines) != 3:
            raise ReceiptError(f"checkpoint body has {len(lines)} lines, not 3 (origin, size, root)")
        origin, size_text, root_text = lines
        if not origin:
            raise ReceiptError("checkpoint has an empty origin")
        if not size_text.isascii() or not size_text.isdigit() or (len(size_text) > 1 and size_text[0] == "0"):
            raise ReceiptError(f"checkpoint size {size_text!r} is not a decimal without leading zeros")
        try:
            root = strict_b64decode(root_text)
        except KeyFormatError as error:
            raise ReceiptError(f"checkpoint root: {error}") from error
        if len(root) != HASH_SIZE:
            raise ReceiptError("checkpoint root is not 32 bytes")
        return cls(origin=origin, size=int(size_text), root=root, note=note)

    def verify(self, trusted: Sequence[VerifierKey]) -> VerifierKey:
        """Checks the signatures; the log's key name is its origin."""
        return self.signers(trusted)[0]

    def signers(self, trusted: Sequence[VerifierKey]) -> list[VerifierKey]:
        """Every trusted key named after the log that signed it (ReceiptError if none, or if
        one of them does not verify)."""
        return self.note.signers([k for k in trusted if k.name == self.origin])


@dataclass(frozen=True)
class TlogProof:
    """A C2SP tlog-proof: optional extra data (Airlock's entry), leaf index, inclusion path,
    and the checkpoint verbatim."""

    extra: bytes | None
    index: int
    hashes: list[bytes]
    checkpoint_text: str

    @classmethod
    def parse(cls, text: str) -> TlogProof:
        rest = text
        if not rest.startswith(TLOG_PROOF_HEADER + "\n"):
            raise ReceiptError(f"proof does not start with {TLOG_PROOF_HEADER}")
        rest = rest[len(TLOG_PROOF_HEADER) + 1 :]
        line, _, rest = rest.partition("\n")
        extra = None
        if line.startswith("extra "):
            try:
                extra = strict_b64decode(line[len("extra ") :])
            except KeyFormatError as error:
                raise ReceiptError(f"proof extra line: {error}") from error
            line, _, rest = rest.partition("\n")
        if not line.startswith("index "):
            raise ReceiptError("proof has no index line")
        digits = line[len("index ") :]
        if not digits.isascii() or not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
            raise ReceiptError(f"proof index {digits!r} is not a decimal without leading zeros")
        hashes: list[bytes] = []
        while True:
            line, newline, rest = rest.partition("\n")
            if not newline:
                raise ReceiptError("proof has no checkpoint")
            if line == "":
                break
            if len(hashes) == MAX_PROOF_HASHES:
                raise ReceiptError(f"proof has more than {MAX_PROOF_HASHES} hashes")
            try:
                h = strict_b64decode(line)
            except KeyFormatError as error:
                raise ReceiptError(f"proof hash {len(hashes)}: {error}") from error
            if len(h) != HASH_SIZE:
                raise ReceiptError(f"proof hash {len(hashes)} is not 32 bytes")
            hashes.append(h)
        return cls(extra=extra, index=int(digits), hashes=hashes, checkpoint_text=rest)

    def verify(self, trusted: Sequence[VerifierKey], leaf: bytes) -> tuple[Checkpoint, list[VerifierKey]]:
        """Checks the checkpoint's signatures and that `leaf` is entry `index` of its tree;
        returns the checkpoint and the trusted keys that signed it."""
        checkpoint = Checkpoint.parse(self.checkpoint_text)
        signers = checkpoint.signers(trusted)
        verify_inclusion(self.index, checkpoint.size, leaf, self.hashes, checkpoint.root)
        return checkpoint, signers
