"""Cancelling from Python against the real stack: a running request is stopped and ends
RequestCancelledError with what it printed until then; cancelling the asyncio task that waits for a
run cancels the request too, not only the wait; a cancellation needs a reason and names only this
client's requests; one that ended stays as it ended."""

from __future__ import annotations

import asyncio
import json
import time

import nats
import pytest

from nats.aio.msg import Msg

from airlock_client import AsyncClient, Client, RequestCancelledError

from .conftest import Stack

LONG = "import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('never')\n"


def test_a_running_request_is_stopped_with_its_output_so_far(client: Client) -> None:
    request = client.submit(LONG)
    first = next(iter(request.output()))
    assert first.text == "started\n"
    asked = time.monotonic()
    request.cancel("the user closed the notebook")
    with pytest.raises(RequestCancelledError) as cancelled:
        request.result(wait=30)
    took = time.monotonic() - asked
    assert took < 30, took
    result = cancelled.value.result
    assert result.outcome == "cancelled"
    assert result.stdout == "started\n"
    assert 'cancelled by its client mai: "the user closed the notebook"' in (result.reason or "")
    assert result.receipt is not None and client.verify_receipt(result)


def test_cancelling_the_task_that_waits_cancels_the_request(client: Client, stack: Stack) -> None:
    async def scenario() -> str:
        # The operator sees every request start: how the test learns the id `run` never returns.
        info = json.loads((stack.home / "stack.json").read_text())
        seed = (stack.home / "creds" / "operator.nk").read_text().strip()
        nc = await nats.connect(info["nats_url"], nkeys_seed_str=seed, inbox_prefix="_INBOX_operator")
        started: asyncio.Queue[str] = asyncio.Queue()

        async def on_started(msg: Msg) -> None:
            await started.put(msg.subject.split(".", 3)[3])

        await nc.subscribe("airlock.exec.started.mai.*", cb=on_started)
        await nc.flush()
        try:
            async with await AsyncClient.connect(home=stack.home) as mai:
                task = asyncio.create_task(mai.run(LONG))
                request_id = await asyncio.wait_for(started.get(), 60)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                return request_id
        finally:
            await nc.close()

    request_id = asyncio.run(scenario())
    with pytest.raises(RequestCancelledError) as cancelled:
        client.attach(request_id).result(wait=30)
    assert "the caller's task was cancelled" in (cancelled.value.result.reason or "")


def test_a_cancellation_needs_a_reason_and_names_only_this_clients_requests(client: Client) -> None:
    request = client.submit("print('quick')\n")
    result = request.result(wait=60)
    with pytest.raises(ValueError, match="reason"):
        request.cancel("  ")
    with pytest.raises(ValueError, match="request ids"):
        client.cancel("bob.r1", "not mine")
    # Ended already: it stays as it ended.
    request.cancel("too late")
    again = client.attach(result.request_id).result(wait=10)
    assert again.outcome == "finished"
