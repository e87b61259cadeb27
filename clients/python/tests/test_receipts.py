"""Receipt verification in Python against real receipts captured from a stack
(`tests/capture_receipts.py`): each verifies, and every alteration is refused."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from airlock_client import ReceiptError, Result, ResultMismatchError, verify_receipt
from airlock_client.results import Receipt
from airlock_client.wire import Envelope

from .conftest import DATA
from .tampering import check_every_alteration_is_refused

CAPTURED: dict[str, Any] = json.loads((DATA / "receipts.json").read_text())


def captured_result(name: str) -> Result:
    case = CAPTURED["cases"][name]
    terminal = Envelope.decode_on(case["terminal_subject"], base64.b64decode(case["terminal"]))
    receipt = Receipt.decode(base64.b64decode(case["receipt"]))
    return Result.from_terminal(case["request_id"], terminal.data, receipt)


@pytest.mark.parametrize("name", sorted(CAPTURED["cases"]))
def test_a_real_receipt_verifies_and_every_alteration_is_refused(name: str) -> None:
    result = captured_result(name)
    tried = check_every_alteration_is_refused(result, CAPTURED["auditor_keys"])
    assert tried > 1000


def test_output_moved_to_blobs_is_bound_by_its_digest() -> None:
    """Output over 256 bytes is not in the entry, only its BLAKE3 digest: the result's output
    must still be the logged one."""
    result = captured_result("large-output")
    assert len(result.raw_stdout) > 256 and len(result.raw_stderr) > 256
    assert verify_receipt(result, CAPTURED["auditor_keys"])
    same_length = bytes([result.raw_stdout[0] ^ 1]) + result.raw_stdout[1:]
    forged = Result.from_terminal(result.request_id, {**result.terminal, "stdout": same_length}, result.receipt)
    with pytest.raises(ResultMismatchError, match="stdout is not the logged one") as refused:
        verify_receipt(forged, CAPTURED["auditor_keys"])
    assert refused.value.field == "stdout"


def test_a_receipt_is_refused_without_a_key_with_another_key_and_for_another_request() -> None:
    result = captured_result("hello")
    with pytest.raises(ReceiptError, match="no auditor key"):
        verify_receipt(result, [])
    other = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
    with pytest.raises(ReceiptError):
        verify_receipt(result, [other])
    # Another request's genuine receipt does not prove this result.
    elsewhere = captured_result("findings-and-exit-3")
    with pytest.raises(ReceiptError):
        verify_receipt(Result.from_terminal(result.request_id, result.terminal, elsewhere.receipt), CAPTURED["auditor_keys"])


def test_a_refused_requests_receipt_proves_its_refusal() -> None:
    result = captured_result("refused")
    assert result.refusal == "invalid_request" and result.outcome == "failed"
    assert verify_receipt(result, CAPTURED["auditor_keys"])
    forged = Result.from_terminal(result.request_id, {**result.terminal, "refusal": "rate_limited"}, result.receipt)
    with pytest.raises(ReceiptError):
        verify_receipt(forged, CAPTURED["auditor_keys"])


def test_a_result_without_a_receipt_does_not_verify() -> None:
    result = captured_result("hello")
    with pytest.raises(ReceiptError, match="no receipt"):
        verify_receipt(Result.from_terminal(result.request_id, result.terminal, None), CAPTURED["auditor_keys"])
