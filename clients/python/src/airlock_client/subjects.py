"""Every NATS name the client uses: streams, subjects, inbox prefixes, message ids.

This is the one module that knows how subjects are built, so that a change of the wire contract
is a change here and nowhere else (see `docs/clients.md`).
"""

from __future__ import annotations

#: The stream of every request event.
EVENTS_STREAM = "AIRLOCK"
#: The stream only the auditor writes: entries, checkpoints, receipts.
AUDIT_STREAM = "AIRLOCK_AUDIT"

#: Where Mai's submissions go; the submitting NATS user's name and the request id follow.
SUBMIT_PREFIX = "airlock.submit"
TERMINAL_PREFIX = "airlock.terminal"
OUTPUT_PREFIX = "airlock.exec.output"
USAGE_PREFIX = "airlock.exec.usage"
DECISION_PREFIX = "airlock.decision"
REFUSED_PREFIX = "airlock.refused"
OVERRIDE_ANSWER_PREFIX = "airlock.override.answer"
AUDIT_RECEIPT_PREFIX = "airlock.audit.receipt"

#: The gate's service endpoint that lists requests waiting for a human (operator only).
GATE_PENDING_ENDPOINT = "airlock.gate.pending"

#: The user Mai connects as, and so the client name in its submission subjects.
DEFAULT_USER = "mai"

#: Subject prefix of each event kind; the request id follows (`<client>.<local>`: two tokens).
EVENT_PREFIXES: dict[str, str] = {
    "assessed": "airlock.assessed",
    "override_asked": "airlock.override.asked",
    "override_answered": OVERRIDE_ANSWER_PREFIX,
    "decided": DECISION_PREFIX,
    "exec_started": "airlock.exec.started",
    "output": OUTPUT_PREFIX,
    "usage": USAGE_PREFIX,
    "activity": "airlock.exec.activity",
    "observed": "airlock.exec.observed",
    "egress": "airlock.exec.egress",
    "terminal": TERMINAL_PREFIX,
    "refused": REFUSED_PREFIX,
    "approval_revoked": "airlock.approval.revoked",
    "progress": "airlock.progress",
}


def inbox_prefix(user: str) -> str:
    """Each user may only subscribe to its own inbox, so replies must come there.

    Without it a JetStream publish fails with a bare timeout although the server stored the
    message: the acknowledgement is sent to an inbox the user may not read.
    """
    return f"_INBOX_{user}"


def submit_subject(request_id: str) -> str:
    """`airlock.submit.<client>.<local>`: the request id names its client, and the server lets
    user `mai` publish only under `airlock.submit.mai.*`, so the services learn who submitted from
    the subject, never from the body."""
    return f"{SUBMIT_PREFIX}.{request_id}"


def cancel_subject(request_id: str) -> str:
    """`airlock.cancel.<client>.<local>`: a client may publish only under its own name, so the
    services know who asked from the subject."""
    return f"airlock.cancel.{request_id}"


#: The longest reason a cancellation may give, in bytes (the services refuse longer ones).
MAX_CANCEL_REASON = 1000


def submission_msg_id(request_id: str, message_id: str) -> str:
    """`Nats-Msg-Id` of a submission: the envelope's own id, so that retrying a publish with
    the same envelope is dropped by the stream while a new submission never is."""
    del request_id  # not part of it (it was in the first contract: `<request id>.submitted`)
    return message_id


def event_subject(kind: str, request_id: str) -> str:
    """The subject of an event of `kind` (not a submission) about `request_id`."""
    return f"{EVENT_PREFIXES[kind]}.{request_id}"


def parse_event_subject(subject: str) -> tuple[str, str] | None:
    """The kind and request id a subject names, or None when it is no event subject.

    The request id is `<client>.<local>` (or, in logs older than client ids, one token); a
    submission's always names its client.
    """
    prefixes = {"submitted": SUBMIT_PREFIX, **EVENT_PREFIXES}
    for kind, kind_prefix in prefixes.items():
        if not subject.startswith(kind_prefix + "."):
            continue
        request_id = subject[len(kind_prefix) + 1 :]
        tokens = request_id.split(".")
        if any(not t for t in tokens) or len(tokens) > 2 or (kind == "submitted" and len(tokens) != 2):
            return None
        return kind, request_id
    return None


def terminal_subject(request_id: str) -> str:
    return event_subject("terminal", request_id)


def observed_subject(request_id: str) -> str:
    """The executor's kernel record of the request's run (`observed`)."""
    return event_subject("observed", request_id)


def output_subject(request_id: str) -> str:
    return event_subject("output", request_id)


def progress_subject(request_id: str) -> str:
    """The request's stages (`progress` events), readable only by the client that submitted it."""
    return event_subject("progress", request_id)


def receipt_subject(request_id: str) -> str:
    """Published by the auditor on the audit stream once the terminal entry is signed."""
    return f"{AUDIT_RECEIPT_PREFIX}.{request_id}"


def answer_msg_id(message_id: str) -> str:
    """`Nats-Msg-Id` of an override answer: its envelope's own id, in both contracts."""
    return message_id
