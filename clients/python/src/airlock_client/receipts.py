"""Verifying an audit receipt offline: the checkpoint is signed by the auditor, the entry in the
proof is included in that checkpoint's tree, and that entry is this result's terminal event.

See "Receipts (tlog-proof)" and "Entries" in `docs/audit-log.md`.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import blake3

from .errors import ReceiptError, WireError
from .keys import KeyFormatError, VerifierKey
from .results import Result
from .tlog import Checkpoint, TlogProof, leaf_hash
from .wire import pack, unpack

#: The entry format this client reads.
ENTRY_VERSION = 1
#: Byte fields of a terminal event that the auditor moves to blobs when they are large.
TERMINAL_BLOB_SLOTS = ("stdout", "stderr")
#: The blob slot of a whole event too large for its entry.
EVENT_SLOT = "event"


def trusted_keys(keys: Iterable[str | VerifierKey]) -> list[VerifierKey]:
    """Parses verifier keys (`name+keyid+base64`, as `airlock audit pubkey` prints them)."""
    parsed = []
    for key in keys:
        if isinstance(key, VerifierKey):
            parsed.append(key)
            continue
        try:
            parsed.append(VerifierKey.parse(key))
        except KeyFormatError as error:
            raise ReceiptError(f"bad auditor key {key!r}: {error}") from error
    return parsed


def verify_receipt(result: Result, keys: Sequence[str | VerifierKey]) -> Checkpoint:
    """Checks `result.receipt` against the auditor's verifier keys; returns the checkpoint.

    Raises ReceiptError when the receipt is missing, malformed, not signed by a trusted key,
    does not include its entry, or its entry is not exactly this result's terminal event.
    """
    trusted = trusted_keys(keys)
    if not trusted:
        raise ReceiptError("no auditor key to verify the receipt with")
    receipt = result.receipt
    if receipt is None:
        raise ReceiptError(f"the result of {result.request_id} has no receipt")
    if receipt.request_id != result.request_id:
        raise ReceiptError(f"the receipt is for {receipt.request_id}, not {result.request_id}")
    proof = TlogProof.parse(receipt.proof)
    if proof.checkpoint_text != receipt.checkpoint:
        raise ReceiptError("the receipt's checkpoint is not the one its proof is against")
    if proof.extra is None:
        raise ReceiptError("the proof carries no entry")
    checkpoint = proof.verify(trusted, leaf_hash(proof.extra))
    entry = _entry(proof.extra)
    _check_entry_place(entry, proof.index, receipt.entries, checkpoint.size, result.request_id)
    _check_entry_is_terminal(entry, result)
    return checkpoint


def _entry(data: bytes) -> dict[str, Any]:
    try:
        entry = unpack(data)
    except WireError as error:
        raise ReceiptError(f"the proof's entry does not decode: {error.reason}") from error
    if not isinstance(entry, dict):
        raise ReceiptError("the proof's entry is not a map")
    if entry.get("v") != ENTRY_VERSION:
        raise ReceiptError(f"the entry has format version {entry.get('v')!r}, not {ENTRY_VERSION}")
    return entry


def _check_entry_place(entry: dict[str, Any], index: int, entries: list[int], size: int, request_id: str) -> None:
    if entry.get("seq") != index:
        raise ReceiptError(f"the entry says it is entry {entry.get('seq')!r}, the proof says {index}")
    if entry.get("kind") != "terminal":
        raise ReceiptError(f"the proven entry is a {entry.get('kind')!r} entry, not the terminal one")
    if entry.get("request_id") != request_id:
        raise ReceiptError(f"the proven entry belongs to request {entry.get('request_id')!r}")
    if index not in entries:
        raise ReceiptError(f"the receipt does not list entry {index} among the request's entries")
    if any(b <= a for a, b in zip(entries, entries[1:])) or entries[-1] >= size:
        raise ReceiptError("the receipt's entries are not in log order within the checkpoint")


def _check_entry_is_terminal(entry: dict[str, Any], result: Result) -> None:
    """The logged terminal event must be the one the result was read from, field for field;
    output the auditor moved to blobs must have the digest and length of the result's."""
    blobs = entry.get("blobs")
    if not isinstance(blobs, dict):
        raise ReceiptError("the entry has no blob map")
    expected = dict(result.terminal)
    if not expected:
        raise ReceiptError("the result carries no terminal event to compare")
    for slot in TERMINAL_BLOB_SLOTS:
        if slot in blobs:
            content = expected.get(slot) or b""
            reference = blobs[slot]
            if not isinstance(reference, dict) or reference.get("len") != len(content):
                raise ReceiptError(f"the logged {slot} is not the length of the result's")
            if reference.get("b3") != blake3.blake3(content).hexdigest():
                raise ReceiptError(f"the logged {slot} is not the result's {slot}")
            expected[slot] = b""
    expected_event = {"kind": "terminal", "data": expected}
    logged = entry.get("event")
    if logged is None:
        reference = blobs.get(EVENT_SLOT)
        if not isinstance(reference, dict):
            raise ReceiptError("the entry holds no event")
        if reference.get("b3") != blake3.blake3(pack(expected_event)).hexdigest():
            raise ReceiptError("the logged terminal event is not the result's")
        return
    if logged != expected_event:
        raise ReceiptError("the logged terminal event is not the result's")
