"""What a request gives back: its result (the same fields as `airlock run --json`), output
chunks, the audit receipt, and the requests waiting for a human."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import WireError
from .wire import unpack


@dataclass(frozen=True)
class Finding:
    """One thing the assessor found (see `Finding` in `schemas/envelope.schema.json`)."""

    rule_id: str
    category: str
    severity: str
    confidence: str
    line: int
    column: int
    snippet: str
    explanation: str
    references: list[str] = field(default_factory=list)

    @classmethod
    def from_wire(cls, value: Any) -> Finding:
        data = _map(value, "finding")
        return cls(
            rule_id=_str(data, "rule_id"),
            category=_str(data, "category"),
            severity=_str(data, "severity"),
            confidence=_str(data, "confidence"),
            line=_int(data, "line"),
            column=_int(data, "column"),
            snippet=_str(data, "snippet"),
            explanation=_str(data, "explanation"),
            references=[str(r) for r in data.get("references") or []],
        )


@dataclass(frozen=True)
class Violation:
    """A limit the code hit: `kind` is timeout, memory, pids, output, cpu or disk."""

    kind: str
    detail: str
    limit: int | None = None
    measured: int | None = None


@dataclass(frozen=True)
class Usage:
    """Totals and peaks of one execution."""

    wall_ms: int
    cpu_ms: int
    peak_memory_bytes: int
    peak_pids: int
    stdout_bytes: int
    stderr_bytes: int


@dataclass(frozen=True)
class OutputChunk:
    """A piece of the program's output as it happened; `seq` orders a request's chunks."""

    stream: str
    seq: int
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    @classmethod
    def from_wire(cls, value: Any) -> OutputChunk:
        data = _map(value, "output chunk")
        chunk = data.get("data")
        if not isinstance(chunk, bytes):
            raise WireError("output chunk: data is not bytes")
        return cls(stream=_str(data, "stream"), seq=_int(data, "seq"), data=chunk)


@dataclass(frozen=True)
class Receipt:
    """The auditor's receipt (`airlock.audit.receipt.<request id>`): every entry of the request,
    the signed checkpoint, and a C2SP tlog-proof of the terminal entry."""

    request_id: str
    entries: list[int]
    checkpoint: str
    proof: str
    #: The bytes as published, kept so the receipt can be stored and verified again later.
    raw: bytes = field(repr=False, default=b"")

    @classmethod
    def decode(cls, raw: bytes) -> Receipt:
        data = _map(unpack(raw), "receipt")
        entries = data.get("entries")
        if not isinstance(entries, list) or not all(isinstance(e, int) and not isinstance(e, bool) for e in entries):
            raise WireError("receipt: entries is not a list of integers")
        return cls(
            request_id=_str(data, "request_id"),
            entries=list(entries),
            checkpoint=_str(data, "checkpoint"),
            proof=_str(data, "proof"),
            raw=raw,
        )


@dataclass(frozen=True)
class Result:
    """A request's end, with the fields and meaning of `airlock run --json`, plus `receipt`.

    `outcome` is finished, failed, denied or expired; `verdict` the assessed level (LOW, MEDIUM,
    HIGH, BLOCKED) or None when the request was refused before assessment; `decision` approved,
    denied or expired; `audit` the request's entry numbers in the audit log and `checkpoint` the
    signed checkpoint covering them (both from the receipt, empty without one).
    """

    request_id: str
    outcome: str
    verdict: str | None
    findings: list[Finding]
    decision: str | None
    approver: dict[str, Any] | None
    quota: str | None
    exit_code: int | None
    stdout: str
    stderr: str
    violation: Violation | None
    usage: Usage | None
    reason: str | None
    audit: list[int]
    checkpoint: str | None
    receipt: Receipt | None
    #: The output exactly as produced (`stdout`/`stderr` replace invalid UTF-8).
    raw_stdout: bytes = field(repr=False, default=b"")
    raw_stderr: bytes = field(repr=False, default=b"")
    #: The terminal event as it arrived, which the receipt's entry must match.
    terminal: dict[str, Any] = field(repr=False, default_factory=dict)
    traceparent: str | None = None
    #: Why a service refused the request (`invalid_request`, `rate_limited`, `duplicate_request`,
    #: ...), when it did and the stack says so; `reason` has the words.
    refusal: str | None = None

    @property
    def ok(self) -> bool:
        """The code ran and exited 0."""
        return self.outcome == "finished" and self.exit_code == 0

    @classmethod
    def from_terminal(
        cls,
        request_id: str,
        terminal: Any,
        receipt: Receipt | None,
        traceparent: str | None = None,
    ) -> Result:
        data = _map(terminal, "terminal event")
        outcome = _str(data, "outcome")
        summary = data.get("decision")
        summary = summary if isinstance(summary, dict) else None
        # The same rule as `airlock run --json`: an expired request says so whatever the
        # decision before it was.
        if outcome == "expired":
            decision: str | None = "expired"
        elif summary is not None:
            decision = _opt_str(summary, "decision")
        elif outcome == "denied":
            decision = "denied"
        else:
            decision = None
        stdout = data.get("stdout") or b""
        stderr = data.get("stderr") or b""
        if not isinstance(stdout, bytes) or not isinstance(stderr, bytes):
            raise WireError("terminal event: stdout or stderr is not bytes")
        violation_data = data.get("violation")
        violation = None
        if isinstance(violation_data, dict):
            violation = Violation(
                kind=_str(violation_data, "kind"),
                detail=_str(violation_data, "detail"),
                limit=_opt_int(violation_data, "limit"),
                measured=_opt_int(violation_data, "measured"),
            )
        usage_data = data.get("usage")
        usage = None
        if isinstance(usage_data, dict):
            usage = Usage(**{name: _int(usage_data, name) for name in Usage.__dataclass_fields__})
        approver = summary.get("approver") if summary is not None else None
        return cls(
            request_id=request_id,
            outcome=outcome,
            verdict=_opt_str(data, "level"),
            findings=[Finding.from_wire(f) for f in data.get("findings") or []],
            decision=decision,
            approver=approver if isinstance(approver, dict) else None,
            quota=_opt_str(summary, "quota") if summary is not None else None,
            exit_code=_opt_int(data, "exit_code"),
            stdout=stdout.decode("utf-8", errors="replace"),
            stderr=stderr.decode("utf-8", errors="replace"),
            violation=violation,
            usage=usage,
            reason=_opt_str(data, "reason"),
            audit=list(receipt.entries) if receipt is not None else [],
            checkpoint=receipt.checkpoint if receipt is not None else None,
            receipt=receipt,
            raw_stdout=stdout,
            raw_stderr=stderr,
            terminal=data,
            traceparent=traceparent,
            refusal=_opt_str(data, "refusal"),
        )

    def to_json(self) -> dict[str, Any]:
        """The object `airlock run --json` prints for this request."""
        return {
            "request_id": self.request_id,
            "outcome": self.outcome,
            "verdict": self.verdict,
            "findings": [asdict(f) for f in self.findings],
            "decision": self.decision,
            "approver": self.approver,
            "quota": self.quota,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "violation": asdict(self.violation) if self.violation is not None else None,
            "usage": asdict(self.usage) if self.usage is not None else None,
            "reason": self.reason,
            "refusal": self.refusal,
            "audit": list(self.audit),
            "checkpoint": self.checkpoint,
            "receipt": self.receipt.proof if self.receipt is not None else None,
        }


@dataclass(frozen=True)
class PendingOverride:
    """A request waiting for a human: what the gate shows the approver (`airlock override list`)."""

    request_id: str
    label: str | None
    level: str
    explanation: str
    findings: list[Finding]
    #: What an answer approves: the code, its inputs, packages, client and what approval grants.
    execution_digest: str
    code_digest: str
    language: str
    origin: str
    code_preview: str
    deadline_ms: int

    @classmethod
    def from_json(cls, value: Any) -> PendingOverride:
        data = _map(value, "pending override")
        return cls(
            request_id=_str(data, "request_id"),
            label=_opt_str(data, "label"),
            level=_str(data, "level"),
            explanation=_str(data, "explanation"),
            findings=[Finding.from_wire(f) for f in data.get("findings") or []],
            execution_digest=_str(data, "execution_digest"),
            code_digest=_str(data, "code_digest"),
            language=_str(data, "language"),
            origin=_str(data, "origin"),
            code_preview=_str(data, "code_preview"),
            deadline_ms=_int(data, "deadline_ms"),
        )


def _map(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireError(f"{what} is not a map")
    return value


def _str(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise WireError(f"{name} is not a string")
    return value


def _opt_str(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise WireError(f"{name} is not a string")
    return value


def _int(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise WireError(f"{name} is not an integer")
    return value


def _opt_int(data: dict[str, Any], name: str) -> int | None:
    if data.get(name) is None:
        return None
    return _int(data, name)
