"""Alters a real receipt in every way a forger could, one byte at a time, and checks that the
Python verifier refuses each alteration. Used on the captured receipts and on fresh ones."""

from __future__ import annotations

import base64
import dataclasses
from typing import Callable, Sequence

import pytest

from airlock_client import AuditKey, Receipt, ReceiptError, Result, WireError, verify_receipt
from airlock_client.tlog import TlogProof

#: Two different alterations per byte: a neighbouring value, and a flipped case bit (which keeps
#: letters letters, so base64 stays decodable and the change reaches the cryptography).
FLIPS = (0x01, 0x20)


def _flipped(data: bytes, at: int, flip: int) -> bytes:
    altered = bytearray(data)
    altered[at] ^= flip
    return bytes(altered)


def _refused(result: Result, keys: Sequence[AuditKey], receipt: Callable[[], Receipt]) -> bool:
    """Whether an altered receipt is refused, either as unreadable or by the verifier."""
    try:
        altered = receipt()
    except (WireError, UnicodeDecodeError):
        return True
    try:
        verify_receipt(dataclasses.replace(result, receipt=altered), keys)
    except ReceiptError:
        return True
    return False


def check_every_alteration_is_refused(result: Result, keys: Sequence[AuditKey]) -> int:
    """Returns how many alterations were tried (all refused); fails at the first accepted one."""
    receipt = result.receipt
    assert receipt is not None and receipt.raw, "a real receipt, with its published bytes"
    assert verify_receipt(result, keys) is True
    tried = 0

    # 1. Every byte of the proof, as published (the receipt's MessagePack bytes).
    proof_bytes = receipt.proof.encode()
    start = receipt.raw.find(proof_bytes)
    assert start > 0
    for at in range(start, start + len(proof_bytes)):
        for flip in FLIPS:
            tried += 1
            raw = _flipped(receipt.raw, at, flip)
            assert _refused(result, keys, lambda: Receipt.decode(raw)), f"proof byte {at - start} ^ {flip:#x} accepted"

    # 2. Every byte of the checkpoint, altered in both copies alike so that only its own checks
    #    (format, signature, root) can catch it.
    checkpoint = receipt.checkpoint.encode()
    for at in range(len(checkpoint)):
        for flip in FLIPS:
            tried += 1
            text = _flipped(checkpoint, at, flip)

            def both() -> Receipt:
                altered = text.decode()
                return dataclasses.replace(receipt, checkpoint=altered, proof=receipt.proof.replace(receipt.checkpoint, altered))

            assert _refused(result, keys, both), f"checkpoint byte {at} ^ {flip:#x} accepted"

    # 3. Every byte of the signature (key id and Ed25519 signature), re-encoded canonically.
    signature_line = [line for line in receipt.checkpoint.splitlines() if line.startswith("\u2014 ")][0]
    name, encoded = signature_line[2:].split(" ")
    signature = base64.b64decode(encoded)
    for at in range(len(signature)):
        tried += 1
        line = f"\u2014 {name} {base64.b64encode(_flipped(signature, at, 0x01)).decode()}"
        altered_checkpoint = receipt.checkpoint.replace(signature_line, line)
        assert _refused(
            result,
            keys,
            lambda: dataclasses.replace(
                receipt,
                checkpoint=altered_checkpoint,
                proof=receipt.proof.replace(receipt.checkpoint, altered_checkpoint),
            ),
        ), f"signature byte {at} accepted"

    # 4. Every byte of the entry, re-encoded canonically so the change reaches the leaf hash.
    proof = TlogProof.parse(receipt.proof)
    assert proof.extra is not None
    extra_line = f"extra {base64.b64encode(proof.extra).decode()}\n"
    assert extra_line in receipt.proof
    for at in range(len(proof.extra)):
        tried += 1
        line = f"extra {base64.b64encode(_flipped(proof.extra, at, 0x01)).decode()}\n"
        assert _refused(
            result, keys, lambda: dataclasses.replace(receipt, proof=receipt.proof.replace(extra_line, line))
        ), f"entry byte {at} accepted"

    # 5. A result that is not the one logged, with the genuine receipt.
    for name_, value in (
        ("exit_code", (result.terminal.get("exit_code") or 0) + 1),
        ("stdout", result.raw_stdout + b"!"),
        ("stderr", b"forged" + result.raw_stderr),
        ("outcome", "denied" if result.outcome != "denied" else "finished"),
    ):
        tried += 1
        forged = dataclasses.replace(result, terminal={**result.terminal, name_: value})
        with pytest.raises(ReceiptError):
            verify_receipt(forged, keys)
    tried += 1
    other_id = result.request_id[:-1] + ("x" if result.request_id[-1] != "x" else "y")
    with pytest.raises(ReceiptError):
        verify_receipt(dataclasses.replace(result, request_id=other_id), keys)
    return tried
