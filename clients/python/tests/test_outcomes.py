"""How each way a request can end maps to a Result or a typed error (the terminal events here are
built in the schema's shape; the stack tests produce each real one)."""

from __future__ import annotations

from typing import Any

import pytest

from airlock_client import (
    DeniedError,
    ExecutionFailedError,
    ExpiredError,
    RefusedError,
    RequestCancelledError,
    RequestError,
    Result,
    ViolationError,
)
from airlock_client.request import raise_for_outcome

APPROVED = {"decision": "approved", "approver": {"by": "policy", "rule": "LOW"}, "quota": "unknown", "limits": None}


def terminal(outcome: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"outcome": outcome, "level": "LOW", "findings": [], "decision": None, "exit_code": None,
                            "stdout": b"", "stderr": b"", "violation": None, "usage": None, "reason": None}
    return {**base, **fields}


def outcome_of(data: dict[str, Any]) -> type[RequestError] | None:
    try:
        raise_for_outcome(Result.from_terminal("r1", data, None))
    except RequestError as error:
        assert error.result.request_id == "r1" and error.reason
        return type(error)
    return None


def test_a_program_that_ran_is_a_result_whatever_its_exit_code() -> None:
    assert outcome_of(terminal("finished", decision=APPROVED, exit_code=0)) is None
    assert outcome_of(terminal("finished", decision=APPROVED, exit_code=1)) is None


@pytest.mark.parametrize(
    "data, error",
    [
        (terminal("denied", decision={"decision": "denied", "approver": {"by": "human", "who": "a", "reason": "no",
                                                                      "key": "k"}}, reason="no"), DeniedError),
        (terminal("denied", decision={"decision": "denied", "approver": {"by": "deadline"}},
                  reason="no answer to the override request before its deadline"), ExpiredError),
        (terminal("expired", reason="the request's deadline passed before a decision"), ExpiredError),
        (terminal("failed", decision=APPROVED, violation={"kind": "memory", "detail": "OOM", "limit": 1, "measured": 2}),
         ViolationError),
        (terminal("failed", level=None, reason="the request was refused: bad env"), RefusedError),
        (terminal("failed", level=None, reason="the request was refused (rate_limited): slow down",
                  refusal="rate_limited"), RefusedError),
        (terminal("failed", decision=APPROVED, reason="dead lettered", refusal="a_reason_from_the_future"), RefusedError),
        (terminal("failed", decision=APPROVED, reason="the sandbox failed: no image"), ExecutionFailedError),
        (terminal("cancelled", decision=APPROVED, reason='cancelled by its client mai: "stop"', stdout=b"started\n"),
         RequestCancelledError),
        (terminal("cancelled", reason='cancelled by its client mai: "stop"'), RequestCancelledError),
    ],
)
def test_every_other_end_raises_its_typed_error(data: dict[str, Any], error: type[RequestError]) -> None:
    assert outcome_of(data) is error


def test_a_refusal_code_is_kept() -> None:
    with pytest.raises(RefusedError) as raised:
        raise_for_outcome(Result.from_terminal("r1", terminal("failed", refusal="duplicate_request",
                                                               reason="the request was refused (duplicate_request): x"), None))
    assert raised.value.refusal == "duplicate_request"
    assert "duplicate_request" in raised.value.reason


def test_a_refusal_that_means_not_now_is_retryable_with_a_hint() -> None:
    for code in ("rate_limited", "too_many_in_flight"):
        with pytest.raises(RefusedError) as raised:
            raise_for_outcome(Result.from_terminal("r1", terminal("failed", level=None, refusal=code,
                                                                  reason=f"the request was refused ({code}): x"), None))
        assert raised.value.retryable is True
        assert raised.value.hint is not None and "again" in raised.value.hint
        assert raised.value.hint in raised.value.reason, "the hint is said with the reason"
    with pytest.raises(RefusedError) as raised:
        raise_for_outcome(Result.from_terminal("r1", terminal("failed", level=None, refusal="invalid_request",
                                                              reason="the request was refused (invalid_request): x"), None))
    assert raised.value.retryable is False and raised.value.hint is None


def test_values_this_client_does_not_know_are_refused_as_wire_errors() -> None:
    from airlock_client import WireError

    for field, value in (("outcome", "exploded"), ("level", "CRITICAL")):
        with pytest.raises(WireError, match=field):
            Result.from_terminal("r1", {**terminal("finished"), field: value}, None)
    with pytest.raises(WireError, match="approver"):
        Result.from_terminal("r1", terminal("denied", decision={"decision": "denied", "approver": {"by": "vibes"}}), None)


def test_the_approver_is_typed_and_kept_as_it_arrived() -> None:
    human = {"by": "human", "who": "alice", "reason": "fine", "key": "approver+1",
             "seconded_by": [{"who": "bob", "reason": "also fine"}]}
    result = Result.from_terminal("r1", terminal("finished", exit_code=0, decision={
        "decision": "approved", "approver": human, "quota": "untrusted"}), None)
    assert result.approver is not None and result.approver.by == "human" and result.approver.who == "alice"
    assert result.approver.seconded_by[0].who == "bob"
    assert result.quota == "untrusted" and result.decision == "approved"
    assert result.to_json()["approver"] == human
