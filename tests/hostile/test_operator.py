"""The operator answers overrides and reads; it cannot reshape the pipeline's consumers or
streams (a consumer with another filter once made the executor skip a decision for good)."""

from __future__ import annotations

import json

from conftest import run
from wire import new_id, request, submission, submit, terminal

HIJACKS = [
    # Re-creating the executor's durable consumer with another filter, in every API form.
    ("$JS.API.CONSUMER.CREATE.AIRLOCK", {"stream_name": "AIRLOCK", "config": {"name": "executor", "filter_subject": "airlock.nothing.*", "ack_policy": "explicit"}}),
    ("$JS.API.CONSUMER.CREATE.AIRLOCK", {"stream_name": "AIRLOCK", "config": {"durable_name": "executor", "filter_subject": "airlock.nothing.*", "ack_policy": "explicit"}}),
    ("$JS.API.CONSUMER.CREATE.AIRLOCK.executor", {"stream_name": "AIRLOCK", "config": {"durable_name": "executor", "filter_subject": "airlock.nothing.*", "ack_policy": "explicit"}}),
    ("$JS.API.CONSUMER.CREATE.AIRLOCK.executor.airlock.nothing.*", {"stream_name": "AIRLOCK", "config": {"durable_name": "executor", "filter_subject": "airlock.nothing.*", "ack_policy": "explicit"}}),
    ("$JS.API.CONSUMER.DURABLE.CREATE.AIRLOCK.executor", {"stream_name": "AIRLOCK", "config": {"durable_name": "executor", "filter_subject": "airlock.nothing.*", "ack_policy": "explicit"}}),
    ("$JS.API.CONSUMER.DELETE.AIRLOCK.executor", {}),
    ("$JS.API.CONSUMER.MSG.NEXT.AIRLOCK.executor", {"batch": 1}),
    ("$JS.API.STREAM.UPDATE.AIRLOCK", {"name": "AIRLOCK", "subjects": ["airlock.nothing.*"]}),
    ("$JS.API.STREAM.PURGE.AIRLOCK", {}),
    ("$JS.API.STREAM.DELETE.AIRLOCK", {}),
]


def test_the_operator_cannot_reshape_the_pipeline(stack) -> None:
    async def go() -> None:
        operator = await stack.connect("operator")
        admin = await stack.connect("admin")
        before = await admin.request("$JS.API.CONSUMER.INFO.AIRLOCK.executor", b"", timeout=5)
        for subject, body in HIJACKS:
            try:
                reply = await operator.request(subject, json.dumps(body).encode(), timeout=2)
            except Exception:
                continue  # no reply: the server dropped the request
            answer = reply.data.decode(errors="replace")
            assert '"error"' in answer, f"{subject} was accepted: {answer}"
        violations = " ".join(operator.permission_errors).lower()
        for subject, _ in HIJACKS:
            assert f'permissions violation for publish to "{subject.lower()}"' in violations, (subject, violations)
        after = await admin.request("$JS.API.CONSUMER.INFO.AIRLOCK.executor", b"", timeout=5)
        assert json.loads(before.data)["config"] == json.loads(after.data)["config"]
        # And the pipeline still runs.
        mai = await stack.connect("mai")
        rid = new_id()
        await submit(mai, rid, submission(rid, request("print('ok')")))
        end = (await terminal(mai, rid))["event"]["data"]
        assert end["outcome"] == "finished" and end["exit_code"] == 0
        await mai.close()
        await operator.close()
        await admin.close()

    run(go())
