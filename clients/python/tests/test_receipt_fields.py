"""A receipt proves what an application reads: each field of a `Result` (stdout, stderr, exit
code, outcome, ...) is compared with the logged event, so an edited one is refused with its
name; a result saved with `to_json()` verifies once loaded with `Result.from_json` (and an
edited saved one does not); a key set keeps receipts signed before a rotation valid while a
retired key vouches for nothing logged after it; the execution digest is the Rust one.

On the real receipts captured from a stack (`tests/capture_receipts.py`); `test_stack.py` and
`test_key_rotation.py` do the same on fresh ones."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from airlock_client import (
    KeySetError,
    ReceiptError,
    Result,
    ResultMismatchError,
    SigningKey,
    TrustedKey,
    UnavailableError,
    VerifierKey,
    Violation,
    WireError,
    parse_key_set,
    verify_receipt,
)
from airlock_client.home import Home
from airlock_client.digest import execution_digest, request_digest
from airlock_client.tlog import TlogProof
from airlock_client.wire import unpack

from .conftest import SCHEMAS
from .test_receipts import CAPTURED, captured_result

KEYS: list[str] = CAPTURED["auditor_keys"]
CASES = sorted(CAPTURED["cases"])

#: For each field an application reads, an edit that always changes it.
EDITS: dict[str, Callable[[Result], Any]] = {
    "stdout": lambda r: r.stdout + "x",
    "raw_stdout": lambda r: r.raw_stdout + b"x",
    "stderr": lambda r: "forged" + r.stderr,
    "raw_stderr": lambda r: b"forged" + r.raw_stderr,
    "exit_code": lambda r: (r.exit_code or 0) + 1,
    "outcome": lambda r: "failed" if r.outcome == "finished" else "finished",
    "reason": lambda r: (r.reason or "") + "!",
    "verdict": lambda r: "HIGH" if r.verdict == "LOW" else "LOW",
    "decision": lambda r: "approved" if r.decision == "denied" else "denied",
    "quota": lambda r: "untrusted" if r.quota == "trusted" else "trusted",
    "refusal": lambda r: None if r.refusal == "rate_limited" else "rate_limited",
    "findings": lambda r: r.findings[1:] if r.findings else captured_result("findings-and-exit-3").findings,
    "usage": lambda r: None if r.usage is not None else captured_result("hello").usage,
    "violation": lambda r: None if r.violation is not None else Violation(kind="memory", detail="forged", limit=1),
    "audit": lambda r: r.audit[:-1],
}


@pytest.mark.parametrize("field", sorted(EDITS))
@pytest.mark.parametrize("name", CASES)
def test_an_edited_field_of_a_result_is_refused_and_named(name: str, field: str) -> None:
    result = captured_result(name)
    assert verify_receipt(result, KEYS)
    edited = dataclasses.replace(result, **{field: EDITS[field](result)})
    assert getattr(edited, field) != getattr(result, field)
    with pytest.raises(ResultMismatchError) as refused:
        verify_receipt(edited, KEYS)
    # The raw bytes and their text are one field to the reader of the message.
    assert refused.value.field == field.removeprefix("raw_"), refused.value
    assert f"the result's {refused.value.field} is not the logged one" in str(refused.value)


@pytest.mark.parametrize("name", CASES)
def test_a_result_saved_as_json_verifies_later_and_an_edited_one_does_not(name: str) -> None:
    result = captured_result(name)
    saved = json.loads(json.dumps(result.to_json()))
    loaded = Result.from_json(saved)
    assert loaded.to_json() == saved, "the round trip is exact"
    for field in ("outcome", "exit_code", "stdout", "stderr", "verdict", "findings", "decision", "approver",
                  "quota", "violation", "usage", "reason", "refusal", "audit", "checkpoint", "receipt"):
        assert getattr(loaded, field) == getattr(result, field), field
    assert verify_receipt(loaded, KEYS) is True
    other_outcome = "finished" if result.outcome != "finished" else "failed"
    for field, value in (("stdout", result.stdout + "edited\n"), ("exit_code", (result.exit_code or 0) + 42),
                         ("stderr", ""), ("outcome", other_outcome)):
        if saved[field] == value:
            continue
        with pytest.raises(ResultMismatchError) as refused:
            verify_receipt(Result.from_json({**saved, field: value}), KEYS)
        assert refused.value.field == field


def test_output_that_is_not_utf8_keeps_its_bytes_through_json() -> None:
    result = captured_result("large-output")
    raw = b"\xff\xfe" + result.raw_stdout[2:]
    odd = dataclasses.replace(result, raw_stdout=raw, stdout=raw.decode("utf-8", errors="replace"))
    saved = json.loads(json.dumps(odd.to_json()))
    assert "stdout_base64" in saved and "stderr_base64" not in saved
    assert Result.from_json(saved).raw_stdout == raw
    # The text alone does not give the bytes back: without the base64 copy they differ.
    assert Result.from_json({k: v for k, v in saved.items() if k != "stdout_base64"}).raw_stdout != raw
    # And the bytes are checked against the log like any field (these are not the logged ones).
    with pytest.raises(ResultMismatchError, match="stdout"):
        verify_receipt(Result.from_json(saved), KEYS)


def test_json_that_is_not_a_saved_result_is_refused() -> None:
    saved = captured_result("hello").to_json()
    for broken in ({**saved, "outcome": "won"}, {**saved, "audit": ["1"]}, {**saved, "stdout_base64": "%%"},
                   {k: v for k, v in saved.items() if k != "stdout"}, [saved]):
        with pytest.raises(WireError):
            Result.from_json(broken)


def test_a_result_without_a_receipt_says_why() -> None:
    result = dataclasses.replace(captured_result("hello"), receipt=None, receipt_pending="no audit receipt after 15 s")
    with pytest.raises(ReceiptError, match="has no receipt: no audit receipt after 15 s"):
        verify_receipt(result, KEYS)
    saved = result.to_json()
    assert saved["receipt_pending"] == "no audit receipt after 15 s"
    assert Result.from_json(saved).receipt_pending == saved["receipt_pending"]


def _logged_at(result: Result) -> int:
    assert result.receipt is not None
    proof = TlogProof.parse(result.receipt.proof)
    assert proof.extra is not None
    time_ms: int = unpack(proof.extra)["time_ms"]
    return time_ms


def test_a_retired_key_vouches_only_for_what_was_logged_before_it_retired() -> None:
    result = captured_result("hello")
    key = VerifierKey.parse(KEYS[0])
    logged_at = _logged_at(result)
    assert verify_receipt(result, [TrustedKey(key, retired_ms=logged_at)])
    with pytest.raises(ReceiptError, match="retired before entry"):
        verify_receipt(result, [TrustedKey(key, retired_ms=logged_at - 1)])


def test_a_key_set_file_parses_as_the_rust_reader_does() -> None:
    new = SigningKey(name="airlock.local/audit", private=Ed25519PrivateKey.generate()).verifier()
    text = (
        "# Verifier keys of airlock.local/audit, newest first (written by `airlock keys rotate`).\n"
        "\n"
        f"{new} created=2026-11-27T12:00:00.123Z\n"
        f"{KEYS[0]} created=2026-11-20T10:00:00Z retired=2026-11-27T12:00:01.456Z\n"
    )
    keys = parse_key_set(text)
    assert [k.key for k in keys] == [new, VerifierKey.parse(KEYS[0])]
    assert [k.retired_ms for k in keys] == [None, 1_795_780_801_456]
    assert [k.created_ms for k in keys] == [1_795_780_800_123, 1_795_168_800_000]
    for bad, line in ((f"# set\n{KEYS[0]} retierd=2026-01-01T00:00:00Z\n", 2), (f"{KEYS[0]} retired=yesterday\n", 1),
                      (f"{KEYS[0]}\n\n{KEYS[0]}\n", 3), ("not-a-key\n", 1), (f"{KEYS[0]} retired\n", 1),
                      (f"{KEYS[0]} retired=2026-01-01T00:00:00\n", 1)):
        with pytest.raises(KeySetError, match=f"^line {line}:"):
            parse_key_set(bad)


def test_the_request_and_execution_digests_are_the_rust_ones() -> None:
    vector = json.loads((SCHEMAS / "vectors" / "execution-digest.json").read_text())
    request = dict(vector["request"])
    request["code"] = bytes(request["code"])
    request["inputs"] = {**request["inputs"], "stdin": bytes(request["inputs"]["stdin"])}
    digest = request_digest(request, vector["client"], vector["wheels"])
    assert digest == vector["request_digest"]
    assert execution_digest(digest, vector["grant"]) == vector["execution_digest"]
    assert execution_digest(digest, vector["read_only_grant"]) == vector["read_only_execution_digest"]
    # Each part counts.
    assert request_digest(request, "other", vector["wheels"]) != digest
    assert request_digest({**request, "code": request["code"] + b" "}, vector["client"], vector["wheels"]) != digest
    assert execution_digest(digest, {**vector["grant"], "quota": "trusted"}) != vector["execution_digest"]


def test_a_home_trusts_its_key_set_and_falls_back_to_its_current_key(tmp_path: Path) -> None:
    home = Home(tmp_path)
    assert home.auditor_keys() == [], "neither file: no key (verify_receipt then says so)"
    (tmp_path / "keys").mkdir()
    current = SigningKey(name="airlock.local/audit", private=Ed25519PrivateKey.generate()).verifier()
    home.verifier_key("auditor").write_text(f"{current}\n")
    assert home.auditor_keys() == [TrustedKey(current)], "no rotation yet: keys/auditor.pub alone"
    old = VerifierKey.parse(KEYS[0])
    home.auditor_key_set().write_text(f"{current} created=2026-11-27T12:00:00Z\n{old} retired=2026-11-27T12:00:01Z\n")
    keys = home.auditor_keys()
    assert [k.key for k in keys] == [current, old] and keys[1].retired_ms == 1_795_780_801_000
    # The current key is trusted even when the set does not list it yet (a rotation in progress).
    home.auditor_key_set().write_text(f"{old} retired=2026-11-27T12:00:01Z\n")
    assert [k.key for k in home.auditor_keys()] == [old, current]
    # The captured receipt (signed by `old` long before) verifies through the home's keys.
    assert verify_receipt(captured_result("hello"), home.auditor_keys())
    for broken in (f"{old} retierd=2026-11-27T12:00:01Z\n", "garbage\n"):
        home.auditor_key_set().write_text(broken)
        with pytest.raises(UnavailableError, match="auditor.keys: line 1"):
            home.auditor_keys()
