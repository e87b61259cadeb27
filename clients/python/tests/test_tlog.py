"""The Python proof verifier against the transparency-dev vectors and the C2SP examples."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from airlock_client.errors import ReceiptError
from airlock_client.keys import ED25519_TYPE, SigningKey, VerifierKey, key_id
from airlock_client.tlog import (
    Checkpoint,
    ProofError,
    SignedNote,
    leaf_hash,
    node_hash,
    verify_consistency,
    verify_inclusion,
)

from .conftest import MERKLE_VECTORS

INCLUSION = sorted((MERKLE_VECTORS / "inclusion").rglob("*.json"))
CONSISTENCY = sorted((MERKLE_VECTORS / "consistency").rglob("*.json"))


def _b64(value: str | None) -> bytes:
    return base64.b64decode(value or "")


def _proof(vector: dict[str, Any]) -> list[bytes]:
    return [_b64(h) for h in vector["proof"] or []]


def _id(path: Path) -> str:
    return str(path.relative_to(MERKLE_VECTORS))


def test_the_vectors_are_there_and_both_kinds_occur() -> None:
    vectors = [json.loads(p.read_text()) for p in INCLUSION + CONSISTENCY]
    assert len(vectors) > 150
    assert any(v["wantErr"] for v in vectors) and any(not v["wantErr"] for v in vectors)


@pytest.mark.parametrize("path", INCLUSION, ids=_id)
def test_inclusion_vector(path: Path) -> None:
    v = json.loads(path.read_text())

    def check() -> None:
        verify_inclusion(v["leafIdx"], v["treeSize"], _b64(v["leafHash"]), _proof(v), _b64(v["root"]))

    if v["wantErr"]:
        with pytest.raises(ProofError):
            check()
    else:
        check()


@pytest.mark.parametrize("path", CONSISTENCY, ids=_id)
def test_consistency_vector(path: Path) -> None:
    v = json.loads(path.read_text())

    def check() -> None:
        verify_consistency(v["size1"], v["size2"], _b64(v["root1"]), _b64(v["root2"]), _proof(v))

    if v["wantErr"]:
        with pytest.raises(ProofError):
            check()
    else:
        check()


def _tree_root(leaves: list[bytes]) -> bytes:
    """RFC 6962's recursive definition, written out directly for the test."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node_hash(_tree_root(leaves[:k]), _tree_root(leaves[k:]))


def _path(index: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 §2.1.1 PATH(m, D[n])."""
    if len(leaves) == 1:
        return []
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    if index < k:
        return _path(index, leaves[:k]) + [_tree_root(leaves[k:])]
    return _path(index - k, leaves[k:]) + [_tree_root(leaves[:k])]


def test_every_leaf_of_trees_up_to_33_is_proved_and_a_wrong_index_is_not() -> None:
    for size in range(1, 34):
        leaves = [leaf_hash(bytes([i])) for i in range(size)]
        root = _tree_root(leaves)
        for index in range(size):
            path = _path(index, leaves)
            verify_inclusion(index, size, leaves[index], path, root)
            if size > 1:
                with pytest.raises(ProofError):
                    verify_inclusion((index + 1) % size, size, leaves[index], path, root)


# The example of C2SP signed-note: this verifier key verifies this note.
SPEC_KEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
SPEC_NOTE = (
    "This is an example message.\n\n"
    "\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)


def test_the_signed_note_specifications_example_verifies() -> None:
    key = VerifierKey.parse(SPEC_KEY)
    note = SignedNote.parse(SPEC_NOTE)
    assert note.text == "This is an example message.\n"
    assert note.verify([key]) == key
    assert str(key) == SPEC_KEY


def test_a_note_with_a_bad_signature_by_a_known_key_is_rejected_and_unknown_keys_are_ignored() -> None:
    key = VerifierKey.parse(SPEC_KEY)
    altered = SPEC_NOTE.replace("example message", "example massage")
    with pytest.raises(ReceiptError, match="does not verify"):
        SignedNote.parse(altered).verify([key])
    other = SigningKey.parse(_private_key("example.com/other", b"\x07" * 32))
    with pytest.raises(ReceiptError, match="no signature by a trusted key"):
        SignedNote.parse(SPEC_NOTE).verify([other.verifier()])


def _private_key(name: str, seed: bytes) -> str:
    """A private key in the signed-note encoding, built here from a fixed seed."""
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    data = base64.b64encode(bytes([ED25519_TYPE]) + seed).decode()
    return f"PRIVATE+KEY+{name}+{key_id(name, public):08x}+{data}"


def test_a_checkpoint_signed_here_parses_and_verifies() -> None:
    key = SigningKey.parse(_private_key("log.example/audit", hashlib.sha256(b"seed").digest()))
    root = hashlib.sha256(b"root").digest()
    body = f"log.example/audit\n7\n{base64.b64encode(root).decode()}\n"
    signature = base64.b64encode(key.key_id.to_bytes(4, "big") + key.sign(body.encode())).decode()
    text = f"{body}\n\u2014 log.example/audit {signature}\n"
    checkpoint = Checkpoint.parse(text)
    assert (checkpoint.origin, checkpoint.size, checkpoint.root) == ("log.example/audit", 7, root)
    assert checkpoint.verify([key.verifier()]) == key.verifier()
    for bad in (
        text.replace("\n7\n", "\n07\n"),
        text.replace("log.example/audit\n7", "log.example/audit\n7\nextension"),
        text[:-1],
        text.replace("\u2014", "-"),
    ):
        with pytest.raises(ReceiptError):
            Checkpoint.parse(bad).verify([key.verifier()])
