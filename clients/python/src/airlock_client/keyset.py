"""The auditor's keys across rotations: the key set file `airlock keys rotate auditor` writes
(`$AIRLOCK_HOME/keys/auditor.keys`), read as the Rust reader (`KeySet` in
`shared/auditlog/src/trust.rs`) reads it. See "Key sets" in `docs/audit-log.md`.

One key per line, newest first, with when it was made and, once replaced, when it stopped
signing; `#` comments and blank lines are ignored:

    airlock.local/audit+73009e41+Ab...= created=2026-11-27T12:00:00.123Z
    airlock.local/audit+e1bb6504+AY...= created=2026-11-20T10:00:00.000Z retired=2026-11-27T12:00:01.456Z
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from .keys import KeyFormatError, VerifierKey


class KeySetError(ValueError):
    """A key set file that does not parse; the message starts with the line number."""


@dataclass(frozen=True)
class TrustedKey:
    """A verifier key and, once a rotation replaced it, when it stopped signing (Unix ms): its
    signatures then vouch only for what was logged up to that time. `created_ms` is for people
    reading the set, not a bound."""

    key: VerifierKey
    retired_ms: int | None = None
    created_ms: int | None = None

    def could_cover(self, time_ms: int) -> bool:
        """Whether this key may have signed a checkpoint covering an entry logged at `time_ms`.
        (A checkpoint is at least as late as every entry it covers, so only the end of a key's
        time in use can be judged from one entry.)"""
        return self.retired_ms is None or time_ms <= self.retired_ms

    def __str__(self) -> str:
        return str(self.key)


def parse_key_set(text: str) -> list[TrustedKey]:
    """The keys of a key set file, in its order (newest first). Raises KeySetError, naming the
    line, for a line that does not parse, an attribute other than `created` and `retired` (a
    misspelt `retired` must not leave a retired key trusted for ever) or a key listed twice."""
    keys: list[TrustedKey] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        try:
            key = VerifierKey.parse(words[0])
        except KeyFormatError as error:
            raise KeySetError(f"line {number}: {error}") from error
        times: dict[str, int] = {}
        for word in words[1:]:
            name, sep, value = word.partition("=")
            if not sep:
                raise KeySetError(f"line {number}: {word!r} is not name=time")
            if name not in ("created", "retired"):
                raise KeySetError(f"line {number}: unknown attribute {name!r} (created, retired)")
            times[name] = _time_ms(value, number, name)
        if any(k.key == key for k in keys):
            raise KeySetError(f"line {number}: {words[0]} is listed twice")
        keys.append(TrustedKey(key=key, retired_ms=times.get("retired"), created_ms=times.get("created")))
    return keys


def _time_ms(value: str, line: int, name: str) -> int:
    """An RFC 3339 time with its offset (the files say `Z`), as Unix milliseconds."""
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise KeySetError(f"line {line}: {name}={value!r} is not an RFC 3339 time") from None
    if when.tzinfo is None:
        raise KeySetError(f"line {line}: {name}={value!r} has no time zone")
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    # Integer arithmetic: a float timestamp could land one millisecond off the Rust reader's.
    delta = when - epoch
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
