"""The typed API without a stack: a Submission and its keyword form say the same thing, bad
values are refused before anything is sent, stages decode from the wire, and the old `timeout=`
still works with a deprecation warning."""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from typing import Any, get_type_hints

import pytest

from airlock_client import AsyncClient, Client, Limits, Request, Status, Submission, SubmissionFields, WireError
from airlock_client.request import AsyncRequest, resolve_wait
from airlock_client.wire import execution_request


def test_the_keyword_form_names_every_field_of_a_submission_but_code() -> None:
    fields = {f.name for f in dataclasses.fields(Submission)} - {"code"}
    assert set(SubmissionFields.__annotations__) == fields
    hints = get_type_hints(Submission)
    keyword_hints = get_type_hints(SubmissionFields)
    for name in fields:
        assert keyword_hints[name] == hints[name], name


def test_run_and_submit_take_a_submission_or_its_fields_and_nothing_positional_after_code() -> None:
    methods: list[Any] = [Client.run, Client.submit, AsyncClient.run, AsyncClient.submit]
    for method in methods:
        parameters = list(inspect.signature(method).parameters.values())
        assert parameters[1].name == "code" and parameters[1].kind is inspect.Parameter.POSITIONAL_ONLY, method
        assert all(p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD) for p in parameters[2:])
    documented: list[Any] = [Client.run, Client.submit, Client.attach, Client.fetch_receipt, Request.result,
                             Request.status, Request.output, AsyncRequest.result]
    for method in documented:
        assert method.__doc__, f"{method.__qualname__} has no docstring"


def test_a_submission_encodes_as_the_wire_request() -> None:
    job = Submission("print(1)\n", language="python", trust="trusted", args=["a"], env={"B": "2", "A": "1"},
                     stdin="in", packages=["six==1.16.0"], label="job.py")
    assert job.to_wire() == execution_request(b"print(1)\n", language="python", origin="generated", trust="trusted",
                                              args=["a"], env={"A": "1", "B": "2"}, stdin=b"in",
                                              packages=["six==1.16.0"], revises=None, deadline_ms=None,
                                              label="job.py")
    assert Submission.of("x", {"trust": "untrusted"}) == Submission("x", trust="untrusted")
    assert Submission.of(job, {"args": ["b"]}) == job.replace(args=["b"])
    assert Submission.of(job, {}) is job
    limited = Submission("x", limits=Limits(wall=1.5, memory=64 << 20, cpus=0.5)).to_wire()
    assert limited["limits"] == {"wall_ms": 1500, "memory_bytes": 64 << 20, "cpu_millis": 500}
    assert "limits" not in Submission("x", limits=Limits()).to_wire(), "nothing asked: no field"
    # The network, as the services write it: absent unless asked, and before the limits.
    assert "network" not in Submission("x").to_wire()
    networked = Submission("x", network="read-only", limits=Limits(wall=1)).to_wire()
    assert networked["network"] == "read-only"
    assert list(networked)[-2:] == ["network", "limits"]


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"language": "ruby"}, ValueError),
        ({"origin": "pasted"}, ValueError),
        ({"trust": "root"}, ValueError),
        ({"network": "open"}, ValueError),
        ({"packages": "numpy"}, TypeError),
        ({"args": [1]}, TypeError),
        ({"env": {"A": 1}}, TypeError),
        ({"revises": "not an id!"}, ValueError),
        ({"deadline": 0}, ValueError),
        ({"limits": {"wall": 1}}, TypeError),
    ],
)
def test_bad_fields_are_refused_before_anything_is_sent(fields: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        Submission("print(1)", **fields)


def test_progress_events_decode_to_statuses() -> None:
    waiting = Status.from_wire({"stage": "waiting_for_human", "deadline_ms": 10**13, "posted_to": ["matrix"]}, 5)
    assert waiting.stage == "waiting_for_human" and waiting.posted_to == ("matrix",)
    assert "waiting for a human (matrix)" in waiting.describe()
    nowhere = Status.from_wire(
        {"stage": "waiting_for_human", "deadline_ms": 10**13, "posted_to": [], "chats_refused": ["slack"]}, 6
    )
    assert nowhere.chats_refused == ("slack",)
    assert "no chat could take it: refused by slack" in nowhere.describe()
    assert Status.from_wire({"stage": "assessed", "level": "HIGH"}, 1).level == "HIGH"
    assert Status.from_wire({"stage": "approved", "by": "alice"}, 1).describe() == "approved by alice"
    assert Status.from_wire({"stage": "queued", "ahead": 3}, 1).ahead == 3
    assert Status.from_wire({"stage": "retrying", "reason": "engine restarted"}, 1).detail == "engine restarted"
    bad_events: list[Any] = [
        {"stage": "teleporting"},
        {"stage": "ended"},
        {"stage": "assessed", "level": "SEVERE"},
        {"stage": "waiting_for_human", "deadline_ms": 1, "chats_refused": "slack"},
        [],
    ]
    for bad in bad_events:
        with pytest.raises(WireError):
            Status.from_wire(bad, 1)


def test_timeout_is_the_deprecated_name_of_wait() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_wait(5, None) == 5
        assert resolve_wait(None, None) == 3600
    with pytest.warns(DeprecationWarning, match="wait="):
        assert resolve_wait(None, 7) == 7
    with pytest.raises(TypeError), pytest.warns(DeprecationWarning):
        resolve_wait(5, 7)
