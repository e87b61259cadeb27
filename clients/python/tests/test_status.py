"""Status while waiting, against the real stack: the stages of a request that waits for a person
whom the test plays, as `request.status()`, `statuses` and the `on_status` callback; the same
read back by a client that attaches later; a receipt fetched after the result."""

from __future__ import annotations

import time
from typing import Callable

from airlock_client import Client, Operator, Status

from .conftest import BLOCKED_SCRIPT, OVERRIDE_TIMEOUT_SECS, Stack


def _wait_for_stage(request_status: Callable[[], Status], stage: str, within: float) -> Status:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        status = request_status()
        if status.stage == stage:
            return status
        time.sleep(0.05)
    raise AssertionError(f"never reached {stage}; last {request_status()}")


def test_status_events_follow_an_override_that_a_person_answers(stack: Stack, client: Client, operator: Operator) -> None:
    seen: list[Status] = []
    submitted_ms = time.time_ns() // 1_000_000
    request = client.submit(BLOCKED_SCRIPT, origin="external", label="status.py", on_status=seen.append)
    # The first stage is the client's own; the assessor may already have moved it on by the time
    # anyone looks (a fast machine rates this in about a millisecond), so only the order is fixed.
    assert request.statuses[0].stage == "submitted"
    assert request.status().stage in ("submitted", "assessed", "waiting_for_human")
    waiting = _wait_for_stage(request.status, "waiting_for_human", OVERRIDE_TIMEOUT_SECS)
    # The deadline is the gate's: the override timeout from when it asked.
    assert waiting.deadline_ms is not None
    assert submitted_ms < waiting.deadline_ms <= submitted_ms + (OVERRIDE_TIMEOUT_SECS + 5) * 1000
    assert waiting.posted_to == () and "airlock override list" in waiting.describe(), "no chat is configured"
    # Another client following the same request reads where it is from the stream.
    with Client.connect(home=stack.home) as later:
        assert later.attach(request.request_id).status().stage == "waiting_for_human"
    operator.approve(request.request_id, "reviewed: it only prints", who="pytest-status")
    result = request.result(60)
    assert result.stdout == "decoded\n"
    stages = [s.stage for s in request.statuses]
    assert stages[:4] == ["submitted", "assessed", "waiting_for_human", "approved"], stages
    assert stages[-1] == "ended"
    assert request.statuses[1].level == "BLOCKED"
    approved = request.statuses[3]
    assert approved.by == "pytest-status" and approved.describe() == "approved by pytest-status"
    assert seen == request.statuses[1:], "the callback saw every stage once, in order"


def test_a_receipt_not_waited_for_is_fetched_later_and_verifies(client: Client) -> None:
    result = client.run("print('later')\n", receipt=False)
    assert result.receipt is None and result.receipt_pending is None, "nothing was asked for"
    fetched = client.fetch_receipt(result)
    assert fetched.receipt is not None and fetched.audit == fetched.receipt.entries
    assert client.verify_receipt(fetched)
