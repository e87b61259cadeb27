"""The closed sets of values the wire carries, as `Literal` types (with the tuples that check
them at run time): a type checker catches `language="pyhton"`, and a value the services send
that this client does not know is refused as a `WireError` rather than passed on as a string
nobody expects."""

from __future__ import annotations

from typing import Literal, TypeVar, get_args

from .errors import WireError

Language = Literal["python", "bash"]
Origin = Literal["generated", "external"]
Trust = Literal["untrusted", "unknown", "trusted"]
#: The network a program asks for: none, or GET/HEAD to allow-listed hosts through Airlock's
#: proxy (`read-only`, granted by the gate's policy or a human).
Network = Literal["none", "read-only"]
#: How a request ended (`Result.outcome`).
Outcome = Literal["finished", "failed", "denied", "expired", "cancelled"]
#: The assessor's rating (`Result.verdict`).
Verdict = Literal["LOW", "MEDIUM", "HIGH", "BLOCKED"]
#: What the gate decided (`Result.decision`).
Decision = Literal["approved", "denied", "expired"]
#: Who decided (`Approver.by`).
ApproverKind = Literal["policy", "human", "remembered", "deadline"]
Stream = Literal["stdout", "stderr"]
#: The limit a program hit (`Violation.kind`).
ViolationKind = Literal["timeout", "memory", "pids", "output", "cpu", "disk"]
#: Where a request is on its way (`Status.stage`); `submitted` before any service said
#: anything, `ended` once its terminal event is in.
Stage = Literal[
    "submitted",
    "assessed",
    "waiting_for_human",
    "approved",
    "denied",
    "queued",
    "waiting_for_audit_log",
    "waiting_for_engine",
    "running",
    "retrying",
    "ended",
]
#: Why a service refused a request (`RefusedError.refusal`). The services may add codes: an
#: unknown one is still a refusal, so this is documentation, not a check.
RefusalCode = Literal[
    "malformed",
    "unknown_schema_version",
    "oversized",
    "subject_mismatch",
    "producer_mismatch",
    "invalid_request",
    "unknown_signer",
    "bad_signature",
    "digest_mismatch",
    "expired",
    "replayed",
    "not_approved",
    "not_pending",
    "duplicate_request",
    "rate_limited",
    "too_many_in_flight",
    "dead_lettered",
]

LANGUAGES: tuple[Language, ...] = get_args(Language)
ORIGINS: tuple[Origin, ...] = get_args(Origin)
NETWORKS: tuple[Network, ...] = get_args(Network)
TRUST_LEVELS: tuple[Trust, ...] = get_args(Trust)
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
DECISIONS: tuple[Decision, ...] = get_args(Decision)
APPROVER_KINDS: tuple[ApproverKind, ...] = get_args(ApproverKind)
STREAMS: tuple[Stream, ...] = get_args(Stream)
VIOLATION_KINDS: tuple[ViolationKind, ...] = get_args(ViolationKind)
STAGES: tuple[Stage, ...] = get_args(Stage)

T = TypeVar("T", bound=str)


def one_of(name: str, value: object, allowed: tuple[T, ...]) -> T:
    """`value` as a member of `allowed`, or WireError naming the field."""
    for member in allowed:
        if value == member:
            return member
    raise WireError(f"{name} is {value!r}; this client knows {', '.join(allowed)}")


def check_argument(name: str, value: object, allowed: tuple[T, ...]) -> T:
    """As `one_of`, for a caller's argument: ValueError, not WireError."""
    try:
        return one_of(name, value, allowed)
    except WireError:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}") from None
