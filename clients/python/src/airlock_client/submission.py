"""What to run: a `Submission`, the one description of a request that `run`, `submit`, a
`Session` and Airlock's MCP tools all take.

    from airlock_client import Submission

    job = Submission("import pandas\\n...", packages=["pandas==3.1.1"], label="step 1")
    result = client.run(job)
    again = client.run(job.replace(args=["--full"]))

`client.run(code, **fields)` builds one from keyword arguments (`SubmissionFields` lists them),
so both spellings say the same thing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from .types import LANGUAGES, NETWORKS, ORIGINS, TRUST_LEVELS, Language, Network, Origin, Trust, check_argument
from .wire import execution_request, is_request_id, now_ms


@dataclass(frozen=True)
class Limits:
    """Limits for one call below the trust level's quota: the gate grants the tighter of the
    two, field by field (asking for more than the quota gets the quota), and signs what it
    grants. The services refuse a value below its floor (wall 0.1 s, memory 32 MiB, 0.01
    core) with a `RefusedError`."""

    #: Wall-clock seconds.
    wall: float | None = None
    #: Memory in bytes.
    memory: int | None = None
    #: Cores (0.5 is half a core).
    cpus: float | None = None

    def __post_init__(self) -> None:
        for name in ("wall", "cpus"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
                raise ValueError(f"{name} must be a positive number")
        if self.memory is not None and (isinstance(self.memory, bool) or not isinstance(self.memory, int) or self.memory <= 0):
            raise ValueError("memory must be a positive number of bytes")

    def to_wire(self) -> dict[str, int] | None:
        """`RequestedLimits` on the wire; None when nothing is asked (no field is sent)."""
        wire: dict[str, int] = {}
        if self.wall is not None:
            wire["wall_ms"] = round(self.wall * 1000)
        if self.memory is not None:
            wire["memory_bytes"] = self.memory
        if self.cpus is not None:
            wire["cpu_millis"] = round(self.cpus * 1000)
        return wire or None


@dataclass(frozen=True)
class Submission:
    """A program and everything said about it. Only the shape is checked here (names of the
    enumerations, types); the services check every bound and refuse what exceeds one with a
    `RefusedError` that says which (`docs/clients.md` lists the bounds)."""

    #: The program's source (str is encoded as UTF-8; bytes are sent as they are).
    code: str | bytes
    language: Language = "python"
    #: `generated` (Mai wrote it) or `external` (fetched or pasted: rated more strictly).
    origin: Origin = "generated"
    #: The quota class asked for (the gate may grant less).
    trust: Trust = "unknown"
    #: `read-only`: GET/HEAD to allow-listed hosts through Airlock's proxy, if the gate grants
    #: it (by policy or a human); `none` (the default): no network at all.
    network: Network = "none"
    #: Python packages to install first, `NAME` or `NAME==VERSION`.
    packages: Sequence[str] = ()
    #: The program's arguments (`sys.argv[1:]`, `$@`).
    args: Sequence[str] = ()
    #: Extra environment variables (those that change how an interpreter starts are refused).
    env: Mapping[str, str] = field(default_factory=dict)
    #: Bytes (or UTF-8 text) on the program's standard input.
    stdin: str | bytes | None = None
    #: A label shown to the approver, such as a file name (one line, at most 256 characters).
    label: str | None = None
    #: The id of an earlier request this one revises (the audit log can then show the diff).
    revises: str | None = None
    #: Seconds from submission after which the request must not start (it ends `expired`).
    deadline: float | None = None
    #: Limits for this call below the quota's (`Limits(wall=5, memory=128 << 20, cpus=0.5)`).
    limits: Limits | None = None
    #: Files placed read-only in the program's working directory before it starts, by relative
    #: path: bytes, text (UTF-8) or a path to read (`{"data.csv": Path("sales.csv")}`). At
    #: most 32 files, 1 MiB each and 2 MiB together; files under `out/` come back in
    #: `Result.files`. They are part of what is approved, and the audit log keeps them.
    files: Mapping[str, bytes | str | os.PathLike[str]] = field(default_factory=dict)
    #: A name that ties the steps of one piece of work together in the audit log (a
    #: `Session` sets it): letters, digits, `_`, `-`, at most 64.
    workspace: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.code, (str, bytes)):
            raise TypeError("code must be str or bytes")
        check_argument("language", self.language, LANGUAGES)
        check_argument("origin", self.origin, ORIGINS)
        check_argument("trust", self.trust, TRUST_LEVELS)
        check_argument("network", self.network, NETWORKS)
        for name in ("packages", "args"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not all(isinstance(item, str) for item in value):
                raise TypeError(f"{name} must be a sequence of str")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.env.items()):
            raise TypeError("env must map str to str")
        if self.stdin is not None and not isinstance(self.stdin, (str, bytes)):
            raise TypeError("stdin must be str, bytes or None")
        if self.revises is not None and not is_request_id(self.revises):
            raise ValueError(f"revises {self.revises!r} is not a request id")
        if self.deadline is not None and not self.deadline > 0:
            raise ValueError("deadline is seconds from now and must be positive")
        if self.limits is not None and not isinstance(self.limits, Limits):
            raise TypeError("limits must be a Limits")
        if not all(isinstance(k, str) and isinstance(v, (bytes, str, os.PathLike)) for k, v in self.files.items()):
            raise TypeError("files must map a name (str) to bytes, str or a path")
        if self.workspace is not None and not isinstance(self.workspace, str):
            raise TypeError("workspace must be a str")

    @classmethod
    def of(cls, code: str | bytes | Submission, fields: Mapping[str, Any]) -> Submission:
        """`code` with `fields`, or a Submission with `fields` replaced."""
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise TypeError(
                f"not a field of a Submission: {', '.join(unknown)} (its fields: {', '.join(sorted(known - {'code'}))}; "
                "wait, receipt, traceparent and on_status go to run() or submit() itself)"
            )
        if isinstance(code, Submission):
            return code.replace(**fields) if fields else code
        return cls(code, **fields)

    def replace(self, **fields: Any) -> Submission:
        """A copy with `fields` changed."""
        return dataclasses.replace(self, **fields)

    @property
    def code_bytes(self) -> bytes:
        return self.code.encode() if isinstance(self.code, str) else self.code

    def file_contents_map(self) -> dict[str, bytes]:
        return dict(self.file_contents())

    def file_contents(self) -> list[tuple[str, bytes]]:
        """The files as they are sent: paths read now, text encoded as UTF-8, in order."""
        contents = []
        for name, value in self.files.items():
            if isinstance(value, bytes):
                content = value
            elif isinstance(value, str):
                content = value.encode()
            else:
                with open(value, "rb") as source:
                    content = source.read()
            contents.append((name, content))
        return contents

    def to_wire(self) -> dict[str, Any]:
        """The `submitted` event's data (`ExecutionRequest`), with the deadline counted from now."""
        return execution_request(
            self.code_bytes,
            language=self.language,
            origin=self.origin,
            trust=self.trust,
            args=list(self.args),
            env=self.env,
            stdin=self.stdin.encode() if isinstance(self.stdin, str) else self.stdin,
            packages=list(self.packages),
            revises=self.revises,
            deadline_ms=now_ms() + int(self.deadline * 1000) if self.deadline is not None else None,
            label=self.label,
            limits=self.limits.to_wire() if self.limits is not None else None,
            network=self.network,
            files=self.file_contents(),
            workspace=self.workspace,
        )


class SubmissionFields(TypedDict, total=False):
    """The fields of a `Submission` but `code`, as keyword arguments of `run` and `submit`."""

    language: Language
    origin: Origin
    trust: Trust
    network: Network
    packages: Sequence[str]
    args: Sequence[str]
    env: Mapping[str, str]
    stdin: str | bytes | None
    label: str | None
    revises: str | None
    deadline: float | None
    limits: Limits | None
    files: Mapping[str, bytes | str | os.PathLike[str]]
    workspace: str | None
