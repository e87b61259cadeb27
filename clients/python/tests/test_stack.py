"""The client against the real stack (`airlock up` in a temporary home, real nats-server, real
Docker): every way a request can end, streamed output, packages from a local index, overrides
answered through the client, the asyncio API, and receipts verified in Python."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nats
import pytest

from airlock_client import (
    Limits,
    AsyncClient,
    AsyncOperator,
    AuditKey,
    Client,
    DeniedError,
    ExpiredError,
    Language,
    Operator,
    OverrideError,
    PermissionDeniedError,
    RefusedError,
    Result,
    ResultMismatchError,
    Submission,
    UnavailableError,
    ViolationError,
    parse_key_set,
    verify_receipt,
)

from airlock_client import subjects
from airlock_client.digest import request_digest
from airlock_client.wire import Envelope, execution_request, request_id_for, uuid7

from .conftest import BLOCKED_SCRIPT, EXTRA_CLIENT, OVERRIDE_TIMEOUT_SECS, REPO, Stack
from .tampering import check_every_alteration_is_refused


def test_hello_world_runs_and_its_receipt_verifies_in_python(stack: Stack, client: Client) -> None:
    result = client.run("print('hello')\n")
    assert result.outcome == "finished" and result.exit_code == 0 and result.ok
    assert result.stdout == "hello\n" and result.stderr == ""
    assert result.verdict == "LOW" and result.decision == "approved"
    assert result.receipt is not None, "the receipt is waited for by default"
    assert result.audit == result.receipt.entries and result.audit
    assert result.checkpoint == result.receipt.checkpoint
    assert client.verify_receipt(result) is True
    # The same check with the keys exactly as `airlock audit pubkey` prints them (one key, or
    # the key set once the key has been rotated).
    pubkey = stack.airlock("audit", "pubkey")
    assert pubkey.returncode == 0, pubkey.stderr
    keys = parse_key_set(pubkey.stdout)
    assert verify_receipt(result, keys) is True
    tried = check_every_alteration_is_refused(result, keys)
    assert tried > 1000


def test_the_result_has_the_fields_and_values_of_airlock_run_json(stack: Stack, client: Client, tmp_path: Path) -> None:
    code = "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(4)\n"
    program = tmp_path / "prog.py"
    program.write_text(code)
    cli = stack.airlock("run", "--json", str(program))
    assert cli.returncode == 1, cli.stderr
    expected = json.loads(cli.stdout)
    result = client.run(code)
    mine = result.to_json()
    # `airlock run` checks the receipt itself and says so (receipt_verified); the Python client
    # checks it on request, with verify_receipt.
    assert expected["receipt_verified"] is True, expected
    assert set(mine) == set(expected) - {"receipt_verified"}
    for field in ("outcome", "verdict", "findings", "decision", "approver", "quota", "runtime", "network",
                  "read_only_hosts", "exit_code", "stdout", "stderr", "violation", "reason"):
        assert mine[field] == expected[field], field
    # The same code, inputs and client: the same request digest, computed by each client.
    assert mine["request_digest"] is not None and mine["request_digest"] == expected["request_digest"]
    # Each client's saved result verifies in Python, and an edited one does not.
    assert client.verify_receipt(Result.from_json(expected)) and client.verify_receipt(Result.from_json(mine))
    with pytest.raises(ResultMismatchError) as refused:
        client.verify_receipt(Result.from_json({**expected, "exit_code": 0}))
    assert refused.value.field == "exit_code"
    assert set(mine["usage"]) == set(expected["usage"])
    assert mine["checkpoint"] and mine["audit"]


def test_the_receipt_proves_the_code_this_client_submitted(stack: Stack, client: Client) -> None:
    """The client knows the request digest of what it submitted; the receipt's check then
    proves that the approval logged (and the run) was for this code and these inputs. A
    result claiming other code, or an edited field, fails, in the blocking, asyncio and
    module-level checks alike."""
    code = "import sys\nprint(sys.argv[1], sys.stdin.read())\n"
    submission = Submission(code, args=["one"], stdin="two")
    result = client.run(submission)
    assert result.stdout == "one two\n"
    assert result.request_digest == request_digest(submission.to_wire(), client.user)
    assert client.verify_receipt(result)
    for other in (submission.replace(code=code + "# another program\n"), submission.replace(args=["1"]),
                  submission.replace(stdin="2")):
        claimed = dataclasses.replace(result, request_digest=request_digest(other.to_wire(), client.user))
        with pytest.raises(ResultMismatchError) as refused:
            client.verify_receipt(claimed)
        assert refused.value.field == "code"
    # Another client submitting the same code is another request.
    with pytest.raises(ResultMismatchError):
        client.verify_receipt(dataclasses.replace(result, request_digest=request_digest(submission.to_wire(), EXTRA_CLIENT)))

    async def scenario() -> None:
        async with await AsyncClient.connect(home=stack.home) as mai:
            mine = await mai.run(submission)
            assert mine.request_digest == result.request_digest
            assert await mai.verify_receipt(mine)
            edited = dataclasses.replace(mine, exit_code=1)
            with pytest.raises(ResultMismatchError, match="exit_code"):
                await mai.verify_receipt(edited)
            with pytest.raises(ResultMismatchError, match="exit_code"):
                verify_receipt(edited, mai.audit_keys)

    asyncio.run(scenario())


def test_a_non_zero_exit_is_a_result_not_an_error(client: Client) -> None:
    result = client.run("import sys\nprint('partial')\nsys.exit(7)\n")
    assert result.outcome == "finished"
    assert result.exit_code == 7 and not result.ok
    assert result.stdout == "partial\n"
    assert client.verify_receipt(result)


def test_the_result_carries_the_kernels_record_of_the_run(client: Client) -> None:
    """`Result.observed`: what the host kernel saw (the executor's eBPF record), not the
    program's own account; it outlives a saved result (`to_json`/`from_json`)."""
    code = (
        "import socket\n"
        "open('/etc/passwd').read()\n"
        "try:\n"
        "    socket.create_connection(('10.1.2.3', 8080), timeout=2)\n"
        "except OSError as e:\n"
        "    print('no network', e.errno)\n"
    )
    result = client.run(code)
    observed = result.observed
    assert observed is not None and not observed.get("unavailable"), observed
    assert observed["source"] == "host kernel (eBPF)"
    assert observed["events_lost"] == 0
    assert any(f["path"] == "/etc/passwd" and f["access"] == "read" for f in observed["files"]), observed
    connect = [n for n in observed["network"] if n["call"] == "connect" and n["address"] == "10.1.2.3:8080"]
    assert connect and connect[0]["result"] == "ENETUNREACH", observed
    assert Result.from_json(result.to_json()).observed == observed


def test_stdout_stderr_args_env_and_stdin_reach_the_program(client: Client) -> None:
    code = (
        "import os, sys\n"
        "print(sys.argv[1:], os.environ['GREETING'])\n"
        "print(sys.stdin.read().upper(), file=sys.stderr)\n"
    )
    result = client.run(code, args=["one", "two words"], env={"GREETING": "hi"}, stdin="piped in")
    assert result.stdout == "['one', 'two words'] hi\n"
    assert result.stderr == "PIPED IN\n"
    assert result.usage is not None and result.usage.stdout_bytes == len(result.raw_stdout)


def test_output_streams_in_chunks_as_it_happens(client: Client) -> None:
    code = (
        "import sys, time\n"
        "for i in range(4):\n"
        "    print(f'line {i}', flush=True)\n"
        "    print(f'err {i}', file=sys.stderr, flush=True)\n"
        "    time.sleep(0.4)\n"
    )
    request = client.submit(code)
    arrivals = []
    chunks = []
    for chunk in request.output():
        chunks.append(chunk)
        arrivals.append(time.monotonic())
    result = request.result()
    assert [c.seq for c in chunks] == sorted(c.seq for c in chunks)
    assert b"".join(c.data for c in chunks if c.stream == "stdout") == result.raw_stdout
    assert b"".join(c.data for c in chunks if c.stream == "stderr") == result.raw_stderr
    assert result.stdout == "".join(f"line {i}\n" for i in range(4))
    # Streamed, not delivered at the end: the program takes 1.6 s and the chunks are spread over it.
    assert len(chunks) >= 4
    assert arrivals[-1] - arrivals[0] > 0.8, arrivals
    assert client.verify_receipt(result)


def test_a_memory_violation_raises_with_its_kind_and_a_verifiable_receipt(client: Client) -> None:
    with pytest.raises(ViolationError) as raised:
        client.run("x = bytearray(1024 * 1024 * 1024)\nprint('never')\n", trust="untrusted")
    error = raised.value
    assert error.violation.kind == "memory"
    assert error.violation.limit == 256 * 1024 * 1024
    assert error.result.outcome == "failed" and error.result.stdout == ""
    assert "memory" in error.reason
    assert verify_receipt(error.result, _auditor_keys(client))


def test_per_call_limits_lower_the_quota_and_the_sandbox_enforces_them(client: Client) -> None:
    with pytest.raises(ViolationError) as raised:
        client.run("x = bytearray(200 * 1024 * 1024)\nprint('never')\n", limits=Limits(memory=64 << 20, wall=5))
    assert raised.value.violation.kind == "memory"
    assert raised.value.violation.limit == 64 << 20
    with pytest.raises(ViolationError) as raised:
        client.run("import time\ntime.sleep(8)\n", limits=Limits(wall=1))
    assert raised.value.violation.kind == "timeout"
    assert raised.value.result.usage is not None and raised.value.result.usage.wall_ms < 4000
    assert verify_receipt(raised.value.result, _auditor_keys(client))
    # Below a floor: the services refuse it and say which limit.
    with pytest.raises(RefusedError) as refused:
        client.run("print(1)\n", limits=Limits(wall=0.01))
    assert "wall_ms" in str(refused.value)


def _auditor_keys(client: Client) -> list[AuditKey]:
    return client.audit_keys


def test_an_invalid_request_is_refused_with_the_services_reason(client: Client) -> None:
    with pytest.raises(RefusedError) as raised:
        client.run("print(1)\n", env={"1BAD": "x"})
    assert "1BAD" in raised.value.reason
    assert raised.value.result.outcome == "failed"
    assert raised.value.result.verdict is None, "refused before assessment"


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"env": {"LD_PRELOAD": "/tmp/x.so"}}, "LD_PRELOAD"),
        ({"env": {"PYTHONSTARTUP": "/tmp/x.py"}}, "PYTHONSTARTUP"),
        ({"label": "x" * 257}, "label"),
        ({"label": "bad\nlabel"}, "label"),
        ({"args": [str(i) for i in range(257)]}, "arg"),
        ({"env": {f"V{i}": "x" for i in range(129)}}, "environment"),
    ],
    ids=["ld-preload", "pythonstartup", "long-label", "control-in-label", "too-many-args", "too-many-env"],
)
def test_requests_outside_the_contracts_bounds_are_refused(client: Client, fields: dict[str, Any], named: str) -> None:
    with pytest.raises(RefusedError) as raised:
        client.run("print('never')\n", **fields)
    assert raised.value.refusal == "invalid_request", raised.value.reason
    assert named.lower() in raised.value.reason.lower()
    assert raised.value.result.stdout == ""


def test_packages_install_from_the_local_index(client: Client) -> None:
    code = "import airlock_client_probe\nprint(airlock_client_probe.VALUE)\n"
    result = client.run(code, packages=["airlock-client-probe==1.0"], wait=300)
    assert result.outcome == "finished", result.to_json()
    assert result.stdout == "probe from the local index\n"
    without = client.run(code)
    assert without.exit_code == 1 and "ModuleNotFoundError" in without.stderr


def _wait_until_pending(operator: Operator, request_id: str) -> None:
    deadline = time.monotonic() + OVERRIDE_TIMEOUT_SECS
    while time.monotonic() < deadline:
        if any(p.request_id == request_id for p in operator.list_overrides()):
            return
        time.sleep(0.2)
    pytest.fail(f"{request_id} never waited for a human")


def test_a_blocked_request_denied_through_the_operator_functions(client: Client, operator: Operator) -> None:
    request = client.submit(BLOCKED_SCRIPT, origin="external", label="blocked.py")
    _wait_until_pending(operator, request.request_id)
    pending = {p.request_id: p for p in operator.list_overrides()}[request.request_id]
    assert pending.level == "BLOCKED" and pending.label == "blocked.py"
    assert pending.findings and pending.code_digest.startswith("sha256:")
    with pytest.raises(ValueError, match="reason"):
        operator.deny(request.request_id, "  ")
    operator.deny(request.request_id, "decoded payloads are not run here", who="pytest")
    with pytest.raises(DeniedError) as raised:
        request.result(60)
    result = raised.value.result
    assert result.decision == "denied" and result.verdict == "BLOCKED"
    assert result.approver is not None and result.approver.by == "human" and result.approver.who == "pytest"
    assert result.approver.reason == "decoded payloads are not run here"
    assert verify_receipt(result, _auditor_keys(client))
    with pytest.raises(OverrideError, match="not waiting"):
        operator.approve(request.request_id, "too late")


def test_a_blocked_request_approved_through_the_operator_functions_runs(client: Client, operator: Operator) -> None:
    request = client.submit(BLOCKED_SCRIPT, origin="external")
    _wait_until_pending(operator, request.request_id)
    operator.approve(request.request_id, "reviewed: it only prints", who="pytest")
    result = request.result(60)
    assert result.stdout == "decoded\n"
    assert result.decision == "approved" and result.quota == "untrusted"


def test_an_unanswered_request_expires(client: Client) -> None:
    started = time.monotonic()
    with pytest.raises(ExpiredError) as raised:
        client.run(BLOCKED_SCRIPT, origin="external", wait=OVERRIDE_TIMEOUT_SECS + 60)
    assert time.monotonic() - started >= OVERRIDE_TIMEOUT_SECS - 1
    result = raised.value.result
    assert result.outcome == "denied" and result.decision == "denied", "the gate denies what nobody answered"
    assert result.approver is not None and result.approver.by == "deadline"
    assert result.to_json()["approver"] == {"by": "deadline"}
    assert result.exit_code is None and "deadline" in raised.value.reason
    assert verify_receipt(result, _auditor_keys(client))


def test_a_request_past_its_own_deadline_expires(client: Client, operator: Operator) -> None:
    """A request whose own deadline passes while it waits for a human ends as expired."""
    with pytest.raises(ExpiredError) as raised:
        client.run(BLOCKED_SCRIPT, origin="external", deadline=2, wait=60)
    assert raised.value.result.verdict == "BLOCKED"


def test_connect_finds_the_stack_through_airlock_home(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRLOCK_HOME", str(stack.home))
    monkeypatch.delenv("AIRLOCK_NATS_URL", raising=False)
    with Client.connect() as from_env:
        result = from_env.run("print(6 * 7)\n")
        assert result.stdout == "42\n"
        assert from_env.verify_receipt(result)


def test_connect_with_an_explicit_url_and_credentials(stack: Stack, tmp_path: Path) -> None:
    info = json.loads((stack.home / "stack.json").read_text())
    keys = parse_key_set(stack.airlock("audit", "pubkey").stdout)
    with Client.connect(home=tmp_path, url=info["nats_url"], creds=stack.home / "creds" / "mai.nk",
                        audit_keys=keys) as explicit:
        assert explicit.verify_receipt(explicit.run("print('explicit')\n"))


def test_no_stack_no_credentials_and_the_wrong_user_are_unavailable(stack: Stack, tmp_path: Path) -> None:
    with pytest.raises(UnavailableError, match="no stack is running"):
        Client.connect(home=tmp_path)
    info = json.loads((stack.home / "stack.json").read_text())
    with pytest.raises(UnavailableError, match="credentials"):
        Client.connect(home=tmp_path, url=info["nats_url"])
    # The operator may not submit: the server refuses the publish, and the client says so.
    with Client.connect(home=stack.home, user="operator") as wrong_user:
        started = time.monotonic()
        with pytest.raises(PermissionDeniedError, match="ermissions"):
            wrong_user.run("print(1)\n", wait=60)
        assert time.monotonic() - started < 5, "a refusal is said at once, not after the publish times out"


def test_a_client_seed_used_for_operator_calls_is_a_permission_error(stack: Stack) -> None:
    """Mai's credentials where the operator's belong: the server refuses them the gate's
    endpoint, and the client says so at once instead of timing out."""
    with Operator.connect(home=stack.home, creds=stack.home / "creds" / "mai.nk") as impostor:
        started = time.monotonic()
        with pytest.raises(PermissionDeniedError, match="refused user operator"):
            impostor.list_overrides()
        assert time.monotonic() - started < 5


def test_another_client_user_submits_under_its_own_name(stack: Stack) -> None:
    with Client.connect(home=stack.home, user=EXTRA_CLIENT) as other:
        result = other.run("print('from another client')\n")
        assert result.stdout == "from another client\n"
        assert other.verify_receipt(result)


def test_mai_may_submit_only_under_its_own_name(stack: Stack) -> None:
    """The server refuses a submission by mai on another client's subject or the first
    contract's: the identity in the subject is vouched for by the server."""

    async def scenario() -> None:
        async with await AsyncClient.connect(home=stack.home) as mai:
            for rid in (request_id_for(EXTRA_CLIENT, uuid7()), uuid7()):
                subject = subjects.submit_subject(rid)
                envelope = Envelope.new(rid, "mai", "submitted", _trivial_request())
                with pytest.raises(PermissionDeniedError, match="ermissions"):
                    await mai._connection.publish(subject, envelope.encode(), {"Nats-Msg-Id": envelope.id}, first=True)

    asyncio.run(scenario())


def _trivial_request() -> dict[str, Any]:
    return execution_request(b"print('once')\n", language="python", origin="generated", trust="unknown", args=[],
                             env=None, stdin=None, packages=[], revises=None, deadline_ms=None, label=None)


def test_attach_reads_an_ended_request_back_from_the_streams(stack: Stack, client: Client) -> None:
    first = client.run("print('once')\n")
    with Client.connect(home=stack.home) as later:
        again = later.attach(first.request_id).result(30)
        assert again.request_id == first.request_id
        assert again.stdout == "once\n"
        assert again.receipt is not None and first.receipt is not None
        assert again.receipt.raw == first.receipt.raw
        assert later.verify_receipt(again)


def test_a_submission_sent_twice_is_stored_once_and_runs_once(stack: Stack) -> None:
    """A retry after a lost acknowledgement sends the same envelope again: the stream keeps one."""

    async def scenario() -> None:
        async with await AsyncClient.connect(home=stack.home) as aclient:
            envelope = Envelope.new(request_id_for("mai", uuid7()), "mai", "submitted", _trivial_request())
            request = await aclient.attach(envelope.request_id)
            subject = subjects.submit_subject(envelope.request_id)
            headers = {"Nats-Msg-Id": subjects.submission_msg_id(envelope.request_id, envelope.id)}
            for _ in range(2):
                await aclient._connection.publish(subject, envelope.encode(), headers, first=True)
            result = await request.result(60)
            assert result.stdout == "once\n"
        seed = (stack.home / "creds" / "operator.nk").read_text().strip()
        url = json.loads((stack.home / "stack.json").read_text())["nats_url"]
        nc = await nats.connect(url, nkeys_seed_str=seed, inbox_prefix="_INBOX_operator")
        try:
            info = await nc.jetstream().stream_info(subjects.EVENTS_STREAM, subjects_filter=subject)
            assert info.state.subjects == {subject: 1}
            terminal = subjects.terminal_subject(envelope.request_id)
            info = await nc.jetstream().stream_info(subjects.EVENTS_STREAM, subjects_filter=terminal)
            assert info.state.subjects == {terminal: 1}
        finally:
            await nc.close()

    asyncio.run(scenario())


def test_the_asyncio_client_runs_streams_and_verifies(stack: Stack) -> None:
    async def scenario() -> None:
        async with await AsyncClient.connect(home=stack.home) as aclient:
            result = await aclient.run("print('async hello')\n")
            assert result.stdout == "async hello\n"
            assert await aclient.verify_receipt(result) is True
            request = await aclient.submit("import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.3)\n")
            chunks = [chunk async for chunk in request.output()]
            final = await request.result()
            assert b"".join(c.data for c in chunks) == final.raw_stdout == b"0\n1\n2\n"
            # Several requests at once on one connection.
            many = await asyncio.gather(*(aclient.run(f"print({i})\n") for i in range(5)))
            assert [r.stdout for r in many] == [f"{i}\n" for i in range(5)]
            with pytest.raises(ViolationError):
                await aclient.run("bytearray(1 << 30)\n", trust="untrusted")
        async with await AsyncOperator.connect(home=stack.home) as aoperator:
            assert isinstance(await aoperator.list_overrides(), list)

    asyncio.run(scenario())


def test_the_example_without_the_client_in_docs_clients_md_runs(stack: Stack, capfd: pytest.CaptureFixture[str]) -> None:
    """The 40-line example of docs/clients.md, exactly as written there, against the stack."""
    text = (REPO / "docs" / "clients.md").read_text()
    match = re.search(r"## A client in 40 lines.*?```python\n(.*?)```", text, re.S)
    assert match, "docs/clients.md has no example"
    code = match.group(1)
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(code, "docs/clients.md", "exec"), namespace)
    terminal = asyncio.run(namespace["run"]("print('hello from the docs')", home=str(stack.home)))
    assert terminal["outcome"] == "finished" and terminal["exit_code"] == 0
    assert terminal["stdout"] == b"hello from the docs\n"
    assert "hello from the docs" in capfd.readouterr().out, "the output chunks were streamed"


def test_the_benchmark_helper_runs_scripts_in_one_process(stack: Stack) -> None:
    """ops/bench/python_client_runner.py, as `airlock bench pipeline` drives it: JSON lines."""
    lines = [{}, {}, {"verify": True}, {"code": "import sys; sys.exit(2)"}, "not json"]
    helper = subprocess.run(
        [sys.executable, str(REPO / "ops" / "bench" / "python_client_runner.py"), "--home", str(stack.home)],
        input="".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert helper.returncode == 0, helper.stderr
    replies = [json.loads(line) for line in helper.stdout.splitlines()]
    assert replies[0] == {"ready": True}
    trivial, again, verified, failing, garbage = replies[1:]
    for reply in (trivial, again, verified):
        assert reply["ok"] is True and reply["receipt"] is True, reply
        assert 0 < reply["ms"] < 60_000
    assert verified["verify_ms"] >= 0
    assert failing["ok"] is False and "exit 2" in failing["error"]
    assert garbage["ok"] is False and "bad request line" in garbage["error"]


def test_a_result_published_while_disconnected_is_read_back_after_reconnecting(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """The stack's nats-server is killed while a program runs and this client stays away (its
    event loop blocked) until another client has seen the result and its receipt: nothing can
    reach it by subscription, so it must read them back from the streams after reconnecting.
    `airlock up` restarts nats-server on the same port and the services reconnect by themselves."""
    caplog.set_level(logging.INFO, logger="airlock_client")

    async def scenario() -> None:
        async with await AsyncClient.connect(home=stack.home) as away:
            request = await away.submit("import time\ntime.sleep(2)\nprint('survived')\n")
            await asyncio.sleep(0.5)
            os.kill(json.loads((stack.home / "stack.json").read_text())["nats_pid"], signal.SIGKILL)
            # Blocking on purpose: while this loop cannot run, the client can neither reconnect
            # nor receive anything.
            with Client.connect(home=stack.home) as witness:
                seen = witness.attach(request.request_id).result(120)
            assert seen.receipt is not None
            result = await request.result(120)
            assert result.stdout == "survived\n"
            assert result.receipt is not None and result.receipt.raw == seen.receipt.raw
            assert await away.verify_receipt(result)

    asyncio.run(scenario())
    assert any("read back from the stream" in r.getMessage() for r in caplog.records), "the catch-up was not needed"


def test_the_asyncio_example_in_the_readme_runs(stack: Stack, capfd: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """clients/python/README.md's asyncio example, exactly as written there, against the stack."""
    text = (REPO / "clients" / "python" / "README.md").read_text()
    match = re.search(r"## asyncio.*?```python\n(.*?)```", text, re.S)
    assert match, "the README has no asyncio example"
    monkeypatch.setenv("AIRLOCK_HOME", str(stack.home))
    monkeypatch.delenv("AIRLOCK_NATS_URL", raising=False)
    exec(compile(match.group(1), "README.md", "exec"), {"__name__": "readme_example"})
    out = capfd.readouterr().out
    assert "['0\\n', '1\\n', '4\\n']" in out
    assert "live: 0" in out and "live: 2" in out


@pytest.mark.parametrize(
    ("language", "code"),
    [
        # print() with no flush: the program does nothing to help its output stream.
        ("python", "import time\nfor i in range(3):\n    print('tick', i)\n    time.sleep(1)\n"),
        # A Python interpreter started by the program (PYTHONUNBUFFERED is set for it).
        ("bash", "python3 -c 'import time\nfor i in range(3):\n    print(\"tick\", i)\n    time.sleep(1)'\n"),
    ],
)
def test_output_printed_once_a_second_is_seen_once_a_second(client: Client, language: Language, code: str) -> None:
    request = client.submit(code, language=language)
    seen: dict[str, float] = {}
    stdout = ""
    for chunk in request.output():
        # An unbuffered interpreter writes a line in pieces: a line counts once it is whole.
        stdout += chunk.text if chunk.stream == "stdout" else ""
        for line in stdout.splitlines(keepends=True):
            if line.endswith("\n"):
                seen.setdefault(line.rstrip("\n"), time.monotonic())
    result = request.result()
    assert result.stdout == "tick 0\ntick 1\ntick 2\n", result.to_json()
    # Buffered pipes would deliver the three lines together at the end.
    assert seen["tick 1"] - seen["tick 0"] > 0.6, seen
    assert seen["tick 2"] - seen["tick 1"] > 0.6, seen
