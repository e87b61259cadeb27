"""Where a request is on its way: the `progress` events the services publish for the client
that submitted it (`airlock.progress.<client>.<local>`), as `Status` values.

An assistant waiting for a result can tell its user why: "waiting for a human in #airlock-ops,
4 minutes left" is not "slow". Progress never decides anything: the terminal event alone ends a
request, and a client that missed a stage still gets its result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from .errors import WireError
from .types import STAGES, VERDICTS, Stage, Verdict, one_of

#: What `on_status` is called with.
StatusCallback = Callable[["Status"], None]


@dataclass(frozen=True)
class Status:
    """One stage of a request; which fields are set depends on `stage`:

    - `submitted`: the client published the request (nothing heard back yet);
    - `assessed`: `level` is the assessor's rating;
    - `waiting_for_human`: `deadline_ms` (no answer by then is a denial) and `posted_to`
      (chats, or empty: `airlock override list`); `chats_refused` names chats that refused the
      request for good (said again when one does: with `posted_to` empty, no chat could take it);
    - `approved` / `denied`: `by` (policy, a person, a remembered approval, the deadline);
    - `queued`: `ahead` requests wait for a sandbox slot before this one;
    - `waiting_for_audit_log` / `waiting_for_engine`: `detail` says what is awaited;
    - `running`;
    - `retrying`: `detail` is why the infrastructure interrupted the run;
    - `ended`: the terminal event is in (`Request.result()` returns or raises at once).
    """

    stage: Stage
    #: When the client saw it (Unix milliseconds).
    time_ms: int
    level: Verdict | None = None
    deadline_ms: int | None = None
    posted_to: tuple[str, ...] = ()
    chats_refused: tuple[str, ...] = ()
    by: str | None = None
    ahead: int | None = None
    detail: str | None = None

    @classmethod
    def now(cls, stage: Stage) -> Status:
        return cls(stage=stage, time_ms=time.time_ns() // 1_000_000)

    @classmethod
    def from_wire(cls, data: Any, time_ms: int) -> Status:
        """A `progress` event's data (`{"stage": ..., ...}`)."""
        if not isinstance(data, dict):
            raise WireError("progress is not a map")
        stage = one_of("stage", data.get("stage"), STAGES)
        if stage in ("submitted", "ended"):
            raise WireError(f"{stage} is the client's own stage, never on the wire")
        level = data.get("level")
        posted_to = _str_list(data, "posted_to")
        chats_refused = _str_list(data, "chats_refused")
        detail = data.get("detail", data.get("reason"))
        return cls(
            stage=stage,
            time_ms=time_ms,
            level=one_of("level", level, VERDICTS) if level is not None else None,
            deadline_ms=_opt_int(data, "deadline_ms"),
            posted_to=tuple(posted_to),
            chats_refused=tuple(chats_refused),
            by=_opt_str(data, "by"),
            ahead=_opt_int(data, "ahead"),
            detail=detail if isinstance(detail, str) else None,
        )

    def describe(self) -> str:
        """One line for a person, in the words `airlock run` prints."""
        if self.stage == "assessed":
            return f"assessed: {self.level}"
        if self.stage == "waiting_for_human":
            place = ", ".join(self.posted_to) or "`airlock override list`"
            if self.chats_refused:
                no_chat = "" if self.posted_to else "no chat could take it: "
                place += f"; {no_chat}refused by {', '.join(self.chats_refused)}"
            left = max(0, ((self.deadline_ms or 0) - time.time_ns() // 1_000_000) // 1000)
            return f"waiting for a human ({place}); {left} s left to answer"
        if self.stage in ("approved", "denied"):
            return f"{self.stage} by {self.by}"
        if self.stage == "queued":
            return f"queued behind {self.ahead} other requests"
        if self.stage == "waiting_for_audit_log":
            return f"waiting for the audit log: {self.detail}"
        if self.stage == "waiting_for_engine":
            return f"waiting for the container engine: {self.detail}"
        if self.stage == "retrying":
            return f"interrupted ({self.detail}); running it again"
        return self.stage.replace("_", " ")


def _opt_int(data: dict[str, Any], name: str) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise WireError(f"progress: {name} is not an integer")
    return value


def _opt_str(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise WireError(f"progress: {name} is not a string")
    return value


def _str_list(data: dict[str, Any], name: str) -> list[str]:
    value = data.get(name) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise WireError(f"progress: {name} is not a list of strings")
    return value
