"""De-duplication ids are Airlock's: Mai chooses `Nats-Msg-Id` on its own submissions only, and
no id it chooses can hide, suppress or end another event."""

from __future__ import annotations

import asyncio

from conftest import run
from wire import named_id, events_of, kinds, new_id, request, settle, submission, submit, terminal

# Every event of a request that runs, produces output, and is observed doing things.
PROGRAM = """
import socket, os
print("first line", flush=True)
open("/tmp/left-behind.txt", "w").write("x")
try:
    socket.create_connection(("198.51.100.1", 80), timeout=0.5)
except OSError:
    pass
print("second line")
"""


def test_pre_claimed_ids_hide_nothing(stack) -> None:
    async def go() -> None:
        mai = await stack.connect("mai")
        admin = await stack.connect("admin")
        rid = new_id()
        # The ids a hostile Mai would pre-claim: every event kind of the victim request, in the
        # old fixed form, and the form of the victim's own submission.
        decoy_ids = [f"{rid}.{kind}" for kind in (
            "submitted", "assessed", "override_asked", "decided", "exec_started", "activity",
            "terminal", "egress", "refused")]
        decoy_ids += [f"{rid}.output.{n}" for n in range(4)] + [f"{rid}.usage.{n}" for n in range(4)]
        for n, msg_id in enumerate(decoy_ids):
            decoy = named_id(f"decoy-{n}")
            await submit(mai, decoy, b"\xc1", headers={"Nats-Msg-Id": msg_id})
        await submit(mai, rid, submission(rid, request(PROGRAM, trust="trusted")))
        end = (await terminal(mai, rid))["event"]["data"]
        assert end["outcome"] == "finished" and end["exit_code"] == 0, end
        events = await settle(admin, rid)
        ks = kinds(events)
        for kind in ("submitted", "assessed", "decided", "exec_started", "output", "terminal"):
            assert kind in ks, (kind, ks)
        # Both activity reports (what was seen from outside, what the program reported) are kept.
        assert ks.count("activity") == 2, ks
        assert ks.count("terminal") == 1
        assert ks.index("terminal") == len(ks) - 1, f"events after the terminal: {ks}"
        replay = stack.airlock("audit", "replay", "--request", rid, "--json")
        assert replay.returncode == 0, replay.stderr
        assert replay.stdout.count('"terminal"') >= 1, replay.stdout[:2000]
        await mai.close()
        await admin.close()

    run(go())


def test_a_second_submission_of_the_same_id_is_refused_without_touching_the_first(stack) -> None:
    async def go() -> None:
        mai = await stack.connect("mai")
        admin = await stack.connect("admin")
        rid = new_id()
        first = "import time\ntime.sleep(2)\nprint('the first one')\n"
        await submit(mai, rid, submission(rid, request(first)))
        await asyncio.sleep(0.3)
        # Same id, other code, other message id: refused, and the first request goes on.
        await submit(mai, rid, submission(rid, request("print('the impostor')")))
        # Another client cannot use the id at all: the server refuses its publish on mai's
        # subject, and under its own name the same envelope names another client's request.
        mai_b = await stack.connect("mai-b")
        try:
            await submit(mai_b, rid, submission(rid, request("print('the other client')")))
            raise AssertionError("mai-b published a submission under mai's name")
        except AssertionError:
            raise
        except Exception:
            pass
        local = rid.split(".", 1)[1]
        await submit(mai_b, rid, submission(rid, request("print('the other client')")),
                     subject=f"airlock.submit.mai-b.{local}")
        end = (await terminal(mai, rid))["event"]["data"]
        assert end["outcome"] == "finished" and end["exit_code"] == 0, end
        assert bytes(end["stdout"]) == b"the first one\n"
        events = await settle(admin, rid)
        ks = kinds(events)
        assert ks.count("terminal") == 1 and ks.count("exec_started") == 1, ks
        refusals = [e["event"]["data"]["reason"] for _, e in events if e and e["event"]["kind"] == "refused"]
        assert refusals.count("duplicate_request") == 1, refusals
        await mai.close()
        await mai_b.close()
        await admin.close()

    run(go())
