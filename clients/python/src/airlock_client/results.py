"""What a request gives back: its result (the same fields as `airlock run --json`), output
chunks, the audit receipt, and the requests waiting for a human."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import pathlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from .errors import ReceiptError, WireError
from .types import (
    APPROVER_KINDS,
    DECISIONS,
    OUTCOMES,
    STREAMS,
    VERDICTS,
    VIOLATION_KINDS,
    ApproverKind,
    Decision,
    Language,
    Origin,
    LANGUAGES,
    ORIGINS,
    Outcome,
    Stream,
    Trust,
    TRUST_LEVELS,
    Verdict,
    ViolationKind,
    one_of,
)
from .tlog import TlogProof
from .wire import pack, unpack

Confidence = Literal["LOW", "MEDIUM", "HIGH"]
Category = Literal["vulnerability", "privileged_access", "malicious_intent", "known_threat", "input"]
CONFIDENCES: tuple[Confidence, ...] = get_args(Confidence)
CATEGORIES: tuple[Category, ...] = get_args(Category)


@dataclass(frozen=True)
class Finding:
    """One thing the assessor found (see `Finding` in `schemas/envelope.schema.json`)."""

    rule_id: str
    category: Category
    #: The level this finding alone would rate the code.
    severity: Verdict
    confidence: Confidence
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
            category=one_of("category", data.get("category"), CATEGORIES),
            severity=one_of("severity", data.get("severity"), VERDICTS),
            confidence=one_of("confidence", data.get("confidence"), CONFIDENCES),
            line=_int(data, "line"),
            column=_int(data, "column"),
            snippet=_str(data, "snippet"),
            explanation=_str(data, "explanation"),
            references=[str(r) for r in data.get("references") or []],
        )


@dataclass(frozen=True)
class Violation:
    """A limit the code hit, and by how much (`limit` and `measured` in the kind's unit: bytes,
    milliseconds, processes)."""

    kind: ViolationKind
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

    stream: Stream
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
        return cls(stream=one_of("stream", data.get("stream"), STREAMS), seq=_int(data, "seq"), data=chunk)


@dataclass(frozen=True)
class OutputFile:
    """A file the program left under `out/` in its working directory. `content` is its bytes,
    or empty when `omitted` says why they were not returned (too large); `sha256` is always of
    the whole file, and the audit log keeps the content (a receipt proves it)."""

    #: Its path under `out/` (`chart.png`, `tables/summary.csv`).
    name: str
    size: int
    sha256: str
    #: `image/png`, `image/svg+xml`, `text/csv`, ... (from its first bytes and name).
    media_type: str
    content: bytes = field(repr=False, default=b"")
    omitted: str | None = None

    @property
    def is_image(self) -> bool:
        return self.media_type.startswith("image/")

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def save(self, directory: str | os.PathLike[str]) -> pathlib.Path:
        """Writes it under `directory` (at its name, which is a plain relative path) and returns
        where. ValueError when its content was not returned or its name is not plain."""
        if self.omitted is not None:
            raise ValueError(f"out/{self.name}: its content was not returned ({self.omitted})")
        parts = self.name.split("/")
        if any(part in ("", ".", "..") for part in parts) or "\\" in self.name:
            raise ValueError(f"out/{self.name}: not a plain relative path")
        path = pathlib.Path(directory).joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.content)
        return path

    @classmethod
    def from_wire(cls, value: Any) -> OutputFile:
        data = _map(value, "output file")
        content = data.get("content") or b""
        if not isinstance(content, bytes):
            raise WireError("output file: content is not bytes")
        return cls(
            name=_str(data, "name"),
            size=_int(data, "size"),
            sha256=_str(data, "sha256"),
            media_type=_str(data, "media_type"),
            content=content,
            omitted=_opt_str(data, "omitted"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "size": self.size,
            "sha256": self.sha256,
            "media_type": self.media_type,
            "content_base64": base64.b64encode(self.content).decode("ascii"),
            "omitted": self.omitted,
        }

    @classmethod
    def from_json(cls, value: Any) -> OutputFile:
        data = _map(value, "output file")
        return cls(
            name=_str(data, "name"),
            size=_int(data, "size"),
            sha256=_str(data, "sha256"),
            media_type=_str(data, "media_type"),
            content=_base64(data, "content_base64"),
            omitted=_opt_str(data, "omitted"),
        )


@dataclass(frozen=True)
class Receipt:
    """The auditor's receipt (`airlock.audit.receipt.<request id>`): every entry of the request,
    the signed checkpoint, and a C2SP tlog-proof of the terminal entry."""

    request_id: str
    entries: list[int]
    checkpoint: str
    proof: str
    #: The bytes as published, kept so the receipt can be stored and verified again later
    #: (not part of its identity: a receipt read back from JSON has none).
    raw: bytes = field(repr=False, default=b"", compare=False)

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
class CoApprover:
    """A second approver under the two-person rule."""

    who: str
    reason: str
    via: str | None = None


@dataclass(frozen=True)
class Approver:
    """Who decided, and on what grounds; which fields are set depends on `by`:

    - `policy`: the gate's policy for the assessed level (`rule` names it);
    - `human`: a person answered (`who`, `reason`, `key` they signed with, `via` the chat they
      answered in, `seconded_by` under the two-person rule);
    - `remembered`: a person approved this exact execution earlier and chose to approve it again
      (`who`, `reason`, `approved_request`, `until_ms`, `remembered` its id);
    - `deadline`: nobody answered before the deadline (a denial).
    """

    by: ApproverKind
    rule: str | None = None
    who: str | None = None
    reason: str | None = None
    key: str | None = None
    via: str | None = None
    seconded_by: tuple[CoApprover, ...] = ()
    approved_request: str | None = None
    until_ms: int | None = None
    remembered: str | None = None
    approved_at_ms: int | None = None
    #: The map as it arrived (what `airlock run --json` prints).
    raw: dict[str, Any] = field(repr=False, default_factory=dict, compare=False)

    @classmethod
    def from_wire(cls, value: Any) -> Approver:
        data = _map(value, "approver")
        seconded = data.get("seconded_by") or []
        if not isinstance(seconded, list):
            raise WireError("approver: seconded_by is not a list")
        return cls(
            by=one_of("approver.by", data.get("by"), APPROVER_KINDS),
            rule=_opt_str(data, "rule"),
            who=_opt_str(data, "who"),
            reason=_opt_str(data, "reason"),
            key=_opt_str(data, "key"),
            via=_opt_str(data, "via"),
            seconded_by=tuple(
                CoApprover(who=_str(c, "who"), reason=_str(c, "reason"), via=_opt_str(c, "via"))
                for c in (_map(c, "co-approver") for c in seconded)
            ),
            approved_request=_opt_str(data, "approved_request"),
            until_ms=_opt_int(data, "until_ms"),
            remembered=_opt_str(data, "remembered"),
            approved_at_ms=_opt_int(data, "approved_at_ms"),
            raw=data,
        )


@dataclass(frozen=True)
class Result:
    """A request's end, with the fields and meaning of `airlock run --json`, plus `receipt`.

    `verdict` is None when the request was refused before assessment; `decision` None when no
    decision was made; `audit` the request's entry numbers in the audit log and `checkpoint` the
    signed checkpoint covering them (both from the receipt, empty without one). When the
    receipt did not come in time, `receipt_pending` says why and how to fetch it later.

    `to_json()` gives the object `airlock run --json` prints and `from_json()` reads it back,
    receipt included, so a saved result can be verified later (`verify_receipt` checks each
    field against the log: an edited one fails).
    """

    request_id: str
    outcome: Outcome
    verdict: Verdict | None
    findings: list[Finding]
    decision: Decision | None
    approver: Approver | None
    #: The quota class granted.
    quota: Trust | None
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
    #: ...), when it did and the stack says so; `reason` has the words. A str, not a Literal:
    #: the services may add codes (`types.RefusalCode` lists those known).
    refusal: str | None = None
    #: Why `receipt` is None although it was asked for: the auditor had not committed the
    #: request's terminal entry to a signed checkpoint within the wait (it is behind, restarting
    #: or stopped), so the receipt is still to come; `client.fetch_receipt(result)` gets it
    #: later. None when the receipt is there or was not asked for. (The Rust client calls the
    #: same text `receipt_missing`; `airlock run --json` reports it as `receipt_problem`.)
    receipt_pending: str | None = None
    #: The request digest of what this client submitted (its code, inputs and client), when
    #: it submitted it without packages: `verify_receipt` then also checks that the logged
    #: approval is for this code. None for an attached request or one naming packages.
    request_digest: str | None = None
    #: What the run did as the host kernel saw it (the executor's `observed` event, not the
    #: program's own account): `processes`, `files`, `network`, `privileged` (bounded lists,
    #: with `*_omitted` counts), `findings` (network attempts the program's report left out),
    #: `events` and `events_lost`; or `unavailable` with the reason. None when the code never ran.
    #: Not covered by the terminal entry's receipt: it is an audit-log entry of its own.
    observed: dict[str, Any] | None = None
    #: The files the program left under `out/` (`images` are those that are pictures).
    files: tuple[OutputFile, ...] = ()
    #: What the approval granted besides the quota: the container runtime (`runc` or `runsc`),
    #: the network (`none` or `read-only`) and, for read-only, the hosts the program could
    #: fetch from, as the gate signed them. None (and no hosts) without an approval.
    runtime: str | None = None
    network: str | None = None
    read_only_hosts: tuple[str, ...] = ()
    #: Why files under `out/` were not looked for (a run killed for a violation, a sandbox the
    #: executor cannot look into); None when they were.
    files_unavailable: str | None = None

    @property
    def images(self) -> tuple[OutputFile, ...]:
        """The returned files that are images (PNG, SVG, JPEG, ...), for an assistant to show:
        what a program saved under `out/`, and matplotlib figures it left open."""
        return tuple(f for f in self.files if f.is_image and f.omitted is None)

    def file(self, name: str) -> OutputFile:
        """The returned file `out/<name>`; KeyError when the program left none by that name."""
        for f in self.files:
            if f.name == name:
                return f
        raise KeyError(f"the program left no out/{name}")

    @property
    def ok(self) -> bool:
        """The code ran and exited 0."""
        return self.outcome == "finished" and self.exit_code == 0

    def with_receipt(self, receipt: Receipt) -> Result:
        """This result with `receipt` (fetched later), its entries and checkpoint."""
        return dataclasses.replace(
            self,
            receipt=receipt,
            audit=list(receipt.entries),
            checkpoint=receipt.checkpoint,
            receipt_pending=None,
        )

    @classmethod
    def from_terminal(
        cls,
        request_id: str,
        terminal: Any,
        receipt: Receipt | None,
        traceparent: str | None = None,
        receipt_pending: str | None = None,
        request_digest: str | None = None,
    ) -> Result:
        data = _map(terminal, "terminal event")
        outcome = one_of("outcome", data.get("outcome"), OUTCOMES)
        summary = data.get("decision")
        summary = summary if isinstance(summary, dict) else None
        # The same rule as `airlock run --json`: an expired request says so whatever the
        # decision before it was.
        decision: Decision | None
        if outcome == "expired":
            decision = "expired"
        elif summary is not None:
            decision = one_of("decision", summary.get("decision"), DECISIONS)
        elif outcome == "denied":
            decision = "denied"
        else:
            decision = None
        stdout = data.get("stdout") or b""
        stderr = data.get("stderr") or b""
        if not isinstance(stdout, bytes) or not isinstance(stderr, bytes):
            raise WireError("terminal event: stdout or stderr is not bytes")
        violation_data = data.get("violation")
        violation = _violation(violation_data) if isinstance(violation_data, dict) else None
        usage_data = data.get("usage")
        usage = _usage(usage_data) if isinstance(usage_data, dict) else None
        approver = summary.get("approver") if summary is not None else None
        quota = summary.get("quota") if summary is not None else None
        granted = _granted(summary or {}, "decision summary")
        level = data.get("level")
        files = data.get("files") or []
        if not isinstance(files, list):
            raise WireError("terminal event: files is not a list")
        return cls(
            request_id=request_id,
            outcome=outcome,
            verdict=one_of("level", level, VERDICTS) if level is not None else None,
            findings=[Finding.from_wire(f) for f in data.get("findings") or []],
            decision=decision,
            approver=Approver.from_wire(approver) if approver is not None else None,
            quota=one_of("quota", quota, TRUST_LEVELS) if quota is not None else None,
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
            receipt_pending=receipt_pending if receipt is None else None,
            request_digest=request_digest,
            files=tuple(OutputFile.from_wire(f) for f in files),
            files_unavailable=_opt_str(data, "files_unavailable"),
            **granted,
        )

    def to_json(self) -> dict[str, Any]:
        """The object `airlock run --json` prints for this request (but its own receipt check,
        `receipt_verified`), which `Result.from_json` reads back for verifying later.

        Output that is not UTF-8 also carries its exact bytes (`stdout_base64`,
        `stderr_base64`, as `airlock run --json`): its text alone could not prove them.
        `receipt_pending` is there when set; `terminal_base64` (the terminal event as it
        arrived, MessagePack) only when the log keeps that event by digest alone (an event
        too large for its entry), which then cannot be checked without it.
        """
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "outcome": self.outcome,
            "verdict": self.verdict,
            "findings": [asdict(f) for f in self.findings],
            "decision": self.decision,
            "approver": self.approver.raw if self.approver is not None else None,
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
            "request_digest": self.request_digest,
            "observed": self.observed,
            "files": [f.to_json() for f in self.files],
            "files_unavailable": self.files_unavailable,
            "runtime": self.runtime,
            "network": self.network,
            "read_only_hosts": list(self.read_only_hosts),
        }
        for name, raw in (("stdout", self.raw_stdout), ("stderr", self.raw_stderr)):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                out[f"{name}_base64"] = base64.b64encode(raw).decode("ascii")
        if self.receipt_pending is not None:
            out["receipt_pending"] = self.receipt_pending
        if self.terminal and _event_kept_by_digest(self.receipt):
            out["terminal_base64"] = base64.b64encode(pack(self.terminal)).decode("ascii")
        return out

    @classmethod
    def from_json(cls, value: Any) -> Result:
        """A result saved with `to_json()` (or printed by `airlock run --json`), receipt
        included, ready for `verify_receipt`. WireError when it is not such an object."""
        data = _map(value, "result")
        request_id = _str(data, "request_id")
        outputs = {name: _saved_output(data, name) for name in ("stdout", "stderr")}
        audit = data.get("audit") or []
        if not isinstance(audit, list) or not all(isinstance(e, int) and not isinstance(e, bool) for e in audit):
            raise WireError("audit is not a list of integers")
        proof, checkpoint = _opt_str(data, "receipt"), _opt_str(data, "checkpoint")
        receipt = None
        if proof is not None and checkpoint is not None:
            receipt = Receipt(request_id=request_id, entries=list(audit), checkpoint=checkpoint, proof=proof)
        terminal: dict[str, Any] = {}
        if data.get("terminal_base64") is not None:
            terminal = _map(unpack(_base64(data, "terminal_base64")), "terminal event")
        approver, violation, usage = data.get("approver"), data.get("violation"), data.get("usage")
        verdict, quota = data.get("verdict"), data.get("quota")
        decision = data.get("decision")
        return cls(
            request_id=request_id,
            outcome=one_of("outcome", data.get("outcome"), OUTCOMES),
            verdict=one_of("verdict", verdict, VERDICTS) if verdict is not None else None,
            findings=[Finding.from_wire(f) for f in data.get("findings") or []],
            decision=one_of("decision", decision, DECISIONS) if decision is not None else None,
            approver=Approver.from_wire(approver) if approver is not None else None,
            quota=one_of("quota", quota, TRUST_LEVELS) if quota is not None else None,
            exit_code=_opt_int(data, "exit_code"),
            stdout=_str(data, "stdout"),
            stderr=_str(data, "stderr"),
            violation=_violation(_map(violation, "violation")) if violation is not None else None,
            usage=_usage(_map(usage, "usage")) if usage is not None else None,
            reason=_opt_str(data, "reason"),
            audit=list(audit),
            checkpoint=checkpoint,
            receipt=receipt,
            raw_stdout=outputs["stdout"],
            raw_stderr=outputs["stderr"],
            terminal=terminal,
            refusal=_opt_str(data, "refusal"),
            receipt_pending=_opt_str(data, "receipt_pending"),
            request_digest=_opt_str(data, "request_digest"),
            observed=_map(data["observed"], "observed") if data.get("observed") is not None else None,
            files=tuple(OutputFile.from_json(f) for f in _list(data, "files")),
            files_unavailable=_opt_str(data, "files_unavailable"),
            **_granted(data, "result"),
        )


def _granted(data: dict[str, Any], what: str) -> dict[str, Any]:
    """The runtime, network and read-only hosts an approval granted, as `Result` fields."""
    hosts = data.get("read_only_hosts") or []
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise WireError(f"{what}: read_only_hosts is not a list of host names")
    return {
        "runtime": _opt_str(data, "runtime"),
        "network": _opt_str(data, "network"),
        "read_only_hosts": tuple(hosts),
    }


@dataclass(frozen=True)
class PendingOverride:
    """A request waiting for a human: what the gate shows the approver (`airlock override list`)."""

    request_id: str
    label: str | None
    level: Verdict
    explanation: str
    findings: list[Finding]
    #: What an answer approves: the code, its inputs, packages, client and what approval grants.
    execution_digest: str
    code_digest: str
    language: Language
    origin: Origin
    code_preview: str
    #: No answer by then (Unix milliseconds) is a denial.
    deadline_ms: int

    @classmethod
    def from_json(cls, value: Any) -> PendingOverride:
        data = _map(value, "pending override")
        return cls(
            request_id=_str(data, "request_id"),
            label=_opt_str(data, "label"),
            level=one_of("level", data.get("level"), VERDICTS),
            explanation=_str(data, "explanation"),
            findings=[Finding.from_wire(f) for f in data.get("findings") or []],
            execution_digest=_str(data, "execution_digest"),
            code_digest=_str(data, "code_digest"),
            language=one_of("language", data.get("language"), LANGUAGES),
            origin=one_of("origin", data.get("origin"), ORIGINS),
            code_preview=_str(data, "code_preview"),
            deadline_ms=_int(data, "deadline_ms"),
        )


def _violation(data: dict[str, Any]) -> Violation:
    return Violation(
        kind=one_of("violation.kind", data.get("kind"), VIOLATION_KINDS),
        detail=_str(data, "detail"),
        limit=_opt_int(data, "limit"),
        measured=_opt_int(data, "measured"),
    )


def _usage(data: dict[str, Any]) -> Usage:
    return Usage(**{name: _int(data, name) for name in Usage.__dataclass_fields__})


def _event_kept_by_digest(receipt: Receipt | None) -> bool:
    """Whether the receipt's entry keeps its event only by digest (too large for the entry)."""
    if receipt is None:
        return False
    try:
        extra = TlogProof.parse(receipt.proof).extra
        entry = unpack(extra) if extra is not None else None
    except (ReceiptError, WireError):
        return False
    return isinstance(entry, dict) and entry.get("event") is None


def _base64(data: dict[str, Any], name: str) -> bytes:
    encoded = data.get(name)
    if not isinstance(encoded, str):
        raise WireError(f"{name} is not a string")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as error:
        raise WireError(f"{name} is not base64: {error}") from error


def _saved_output(data: dict[str, Any], name: str) -> bytes:
    """The exact output bytes of a saved result: `<name>_base64` when there, else its text."""
    if data.get(f"{name}_base64") is not None:
        return _base64(data, f"{name}_base64")
    return _str(data, name).encode("utf-8")


def _list(data: dict[str, Any], name: str) -> list[Any]:
    value = data.get(name) or []
    if not isinstance(value, list):
        raise WireError(f"{name} is not a list")
    return value


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
