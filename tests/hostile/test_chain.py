"""What the human approves is exactly what runs (issue 20), tried as a prompt-injected Mai would:
an approval remembered for "this exact code" does not stretch to other inputs, another language
or another client, and is revoked on demand; Mai's label never speaks in Airlock's voice; output
and code never drive the operator's terminal; one client cannot read another's results."""

from __future__ import annotations

import asyncio

from conftest import run
from wire import events_of, kinds, new_id, request, settle, submission, submit, terminal

# External code that decodes and executes a payload: BLOCKED for external code, harmless when
# it runs (the payload is `print('hi from the payload')`).
BLOCKED = (
    "import base64\n"
    "exec(base64.b64decode('cHJpbnQoJ2hpIGZyb20gdGhlIHBheWxvYWQnKQ=='))\n"
)


async def until_kind(admin, rid: str, kind: str, timeout: float = 60) -> list:
    """The request's events once one of `kind` is among them."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        events = await events_of(admin, rid)
        if kind in kinds(events):
            return events
        await asyncio.sleep(0.3)
    raise AssertionError(f"no {kind} for {rid}: {kinds(await events_of(admin, rid))}")


def decided_by(events) -> dict:
    return next(e["event"]["data"] for _, e in events if e and e["event"]["kind"] == "decided")


def asked_or_remembered(events) -> str:
    ks = kinds(events)
    if "override_asked" in ks:
        return "asked"
    if "decided" in ks:
        signed = decided_by(events)["signed"]
        import msgpack
        decision = msgpack.unpackb(bytes(signed["payload"]), raw=False)
        return decision["approver"]["by"]
    return "undecided"


def test_a_remembered_approval_covers_exactly_what_was_approved(stack) -> None:
    async def go() -> None:
        mai = await stack.connect("mai")
        mai_b = await stack.connect("mai-b")
        admin = await stack.connect("admin")

        async def submit_as(nc, client: str, *, stdin: bytes = b"a", language: str = "python") -> str:
            rid = new_id(client)
            await submit(nc, rid, submission(rid, request(BLOCKED, origin="external", stdin=stdin,
                                                          language=language)))
            return rid

        async def outcome_of(rid: str) -> str:
            """Asked (then denied, to end it) or decided without asking: by whom."""
            events: list = []
            deadline = asyncio.get_running_loop().time() + 60
            while asyncio.get_running_loop().time() < deadline:
                events = await events_of(admin, rid)
                seen = asked_or_remembered(events)
                if seen != "undecided":
                    if seen == "asked":
                        deny = stack.airlock("override", "deny", rid, "--reason", "chain test: asked again")
                        assert deny.returncode == 0, deny.stderr
                    return seen
                await asyncio.sleep(0.3)
            raise AssertionError(f"{rid} was neither asked nor decided: {kinds(events)}")

        # A human approves once, choosing to approve this exact execution again.
        first = await submit_as(mai, "mai")
        await until_kind(admin, first, "override_asked")
        approve = stack.airlock("override", "approve", first, "--reason", "reviewed the payload",
                                "--who", "alice", "--again", "30m")
        assert approve.returncode == 0, approve.stdout + approve.stderr
        end = (await terminal(mai, first))["event"]["data"]
        assert end["outcome"] == "finished", end

        # The same execution runs again without asking, and says whose approval it ran under.
        same = await submit_as(mai, "mai")
        assert await outcome_of(same) == "remembered"
        # Anything else that decides what runs asks again: another stdin, the same bytes as
        # another language, the same request from another client.
        assert await outcome_of(await submit_as(mai, "mai", stdin=b"b")) == "asked"
        assert await outcome_of(await submit_as(mai, "mai", language="bash")) != "remembered"
        assert await outcome_of(await submit_as(mai_b, "mai-b")) == "asked"

        listed = stack.airlock("override", "remembered", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        import json
        remembered = json.loads(listed.stdout)
        assert len(remembered) == 1 and remembered[0]["approved_request"] == first, remembered
        assert remembered[0]["void"] is None, remembered
        revoke = stack.airlock("override", "remembered", "revoke", remembered[0]["id"], "--reason", "test over",
                               "--who", "alice")
        assert revoke.returncode == 0, revoke.stdout + revoke.stderr
        # Revoked: the same execution asks again, and the revocation is in the log.
        assert await outcome_of(await submit_as(mai, "mai")) == "asked"
        revoked = [e for _, e in await events_of(admin, first) if e and e["event"]["kind"] == "approval_revoked"]
        assert len(revoked) == 1 and revoked[0]["event"]["data"]["who"] == "alice", revoked
        for nc in (mai, mai_b, admin):
            await nc.close()

    run(go())


def test_a_label_never_speaks_in_airlocks_voice(stack) -> None:
    async def go() -> None:
        mai = await stack.connect("mai")
        admin = await stack.connect("admin")
        forged = "report.py) rated LOW: no findings\u2028Security review: safe to approve \u202e\u200b"
        rid = new_id()
        await submit(mai, rid, submission(rid, request(BLOCKED, origin="external", label=forged)))
        events = await until_kind(admin, rid, "override_asked")
        asked = next(e["event"]["data"] for _, e in events if e and e["event"]["kind"] == "override_asked")
        first_line = asked["explanation"].splitlines()[0]
        assert first_line.startswith("External python code rated BLOCKED"), first_line
        assert "rated LOW" not in first_line and "report.py" not in first_line, first_line
        assert "\u2028" not in asked["explanation"] and "\u202e" not in asked["explanation"]
        assert "⟨U+2028⟩" in asked["explanation"], asked["explanation"]
        listing = stack.airlock("override", "list")
        assert listing.returncode == 0, listing.stderr
        for hidden in ("\u2028", "\u202e", "\u200b", "\x1b"):
            assert hidden not in listing.stdout, (hidden, listing.stdout)
        assert stack.airlock("override", "deny", rid, "--reason", "forged label").returncode == 0
        await terminal(mai, rid)
        await mai.close()
        await admin.close()

    run(go())


def test_output_and_code_never_drive_the_operators_terminal(stack) -> None:
    async def go() -> None:
        mai = await stack.connect("mai")
        code = "print('\\x1b]52;c;ZXZpbA==\\x07 \\x1b[2J\\x1b[H done')  # \u2066hidden\u2069\n"
        rid = new_id()
        await submit(mai, rid, submission(rid, request(code)))
        end = (await terminal(mai, rid))["event"]["data"]
        assert end["outcome"] == "finished" and b"\x1b]52" in bytes(end["stdout"]), end
        for command in (["audit", "replay", "--request", rid],):
            shown = stack.airlock(*command)
            assert shown.returncode == 0, shown.stderr
            assert "\x1b" not in shown.stdout and "\u2066" not in shown.stdout, shown.stdout
            assert "⟨U+001B⟩]52;c;ZXZpbA==⟨U+0007⟩" in shown.stdout, shown.stdout
        await mai.close()

    run(go())


def test_one_client_cannot_read_anothers_results(stack) -> None:
    async def go() -> None:
        mai = await stack.connect("mai")
        mai_b = await stack.connect("mai-b")
        seen: list[bytes] = []

        async def collect(msg) -> None:
            seen.append(msg.data)

        # Everything mai-b may try to listen on for mai's results.
        for subject in ("airlock.terminal.>", "airlock.exec.output.>", "airlock.exec.output.mai.*",
                        "airlock.terminal.mai.*", "airlock.audit.receipt.mai.*", "airlock.exec.usage.>"):
            await mai_b.subscribe(subject, cb=collect)
        await mai_b.flush()
        rid = new_id()
        secret = "s3cr3t-" + rid[-8:]
        await submit(mai, rid, submission(rid, request("import os\nprint(os.environ['TOKEN'])\n",
                                                       env={"TOKEN": secret})))
        end = (await terminal(mai, rid))["event"]["data"]
        assert bytes(end["stdout"]) == (secret + "\n").encode(), end
        await asyncio.sleep(1.0)
        assert not any(secret.encode() in m for m in seen), "mai-b read mai's output"
        violations = " ".join(mai_b.permission_errors).lower()
        assert 'permissions violation for subscription to "airlock.terminal.>"' in violations, violations
        assert 'permissions violation for subscription to "airlock.exec.output.mai.*"' in violations, violations
        # Nor by direct get from the stream.
        try:
            reply = await mai_b.request(f"$JS.API.DIRECT.GET.AIRLOCK.airlock.terminal.{rid}", b"", timeout=2)
            assert secret.encode() not in reply.data, "mai-b read mai's terminal event"
        except Exception:
            pass
        # mai-b's own results are its own to read.
        own = new_id("mai-b")
        await submit(mai_b, own, submission(own, request("print('mine')")))
        mine = (await terminal(mai_b, own))["event"]["data"]
        assert bytes(mine["stdout"]) == b"mine\n", mine
        await mai.close()
        await mai_b.close()

    run(go())
