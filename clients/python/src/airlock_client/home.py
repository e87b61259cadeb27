"""Finding a running stack the way the `airlock` command does: through `$AIRLOCK_HOME`.

Layout used here: `stack.json` (the NATS URL of the running stack, the supervisor's pid),
`creds/<user>.nk` (NATS nkey seeds), `keys/auditor.pub` and `keys/auditor.keys` (the auditor's
verifier key, and its keys across rotations, for receipts) and `keys/approver.key` (the
operator's key for answering overrides).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import UnavailableError
from .keys import KeyFormatError, VerifierKey
from .keyset import KeySetError, TrustedKey, parse_key_set

#: Set to reach a stack at this URL whatever `stack.json` says (as the CLI honours it).
NATS_URL_VARIABLE = "AIRLOCK_NATS_URL"
HOME_VARIABLE = "AIRLOCK_HOME"


def default_home() -> Path:
    """`$AIRLOCK_HOME`, else the user's data directory + `airlock` (as the CLI decides)."""
    explicit = os.environ.get(HOME_VARIABLE)
    if explicit:
        return Path(explicit)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "airlock"
    data = os.environ.get("XDG_DATA_HOME")
    base = Path(data) if data and Path(data).is_absolute() else Path.home() / ".local" / "share"
    return base / "airlock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        # It exists, owned by someone else.
        return True
    return True


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def locate(cls, home: str | os.PathLike[str] | None = None) -> Home:
        return cls(Path(home) if home is not None else default_home())

    def creds(self, user: str) -> Path:
        return self.root / "creds" / f"{user}.nk"

    def verifier_key(self, name: str) -> Path:
        return self.root / "keys" / f"{name}.pub"

    def private_key(self, name: str) -> Path:
        return self.root / "keys" / f"{name}.key"

    def nats_url(self) -> str:
        """The running stack's NATS URL, or UnavailableError saying how to start one."""
        override = os.environ.get(NATS_URL_VARIABLE)
        if override:
            return override
        try:
            info = json.loads((self.root / "stack.json").read_bytes())
        except FileNotFoundError:
            raise UnavailableError(f"no stack is running in {self.root}; start one with `airlock up`") from None
        except (OSError, ValueError) as error:
            raise UnavailableError(f"{self.root / 'stack.json'} is unreadable: {error}") from error
        pid = info.get("supervisor_pid")
        url = info.get("nats_url")
        if not isinstance(url, str) or not isinstance(pid, int):
            raise UnavailableError(f"{self.root / 'stack.json'} names no NATS URL and supervisor")
        if not _alive(pid):
            raise UnavailableError(
                f"the stack in {self.root} is not running (stale stack.json); start it with `airlock up`"
            )
        return url

    def auditor_key_set(self) -> Path:
        """`keys/auditor.keys`: every key that signed the audit log, newest first, a retired one
        with when it stopped signing (written by `airlock keys rotate auditor`)."""
        return self.root / "keys" / "auditor.keys"

    def auditor_keys(self) -> list[TrustedKey]:
        """The keys receipts are checked against, as the Rust client takes them: the key set
        (so that receipts signed before a rotation keep verifying, while a retired key vouches
        for nothing logged after it) and the current key, `keys/auditor.pub`. Without a key set
        (no rotation yet) the current key alone; empty when this home has neither.
        UnavailableError when a file is there but unreadable or malformed."""
        keys: list[TrustedKey] = []
        key_set = self.auditor_key_set()
        try:
            keys = parse_key_set(key_set.read_text())
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError, KeySetError) as error:
            raise UnavailableError(f"cannot use the auditor's key set {key_set}: {error}") from error
        current = self.verifier_key("auditor")
        try:
            text = current.read_text().strip()
        except FileNotFoundError:
            return keys
        except (OSError, UnicodeDecodeError) as error:
            raise UnavailableError(f"cannot read the auditor's key {current}: {error}") from error
        if not text:
            return keys
        try:
            key = VerifierKey.parse(text)
        except KeyFormatError as error:
            raise UnavailableError(f"{current} does not hold a verifier key: {error}") from error
        if not any(k.key == key for k in keys):
            keys.append(TrustedKey(key))
        return keys


def read_seed(path: str | os.PathLike[str]) -> str:
    """An nkey seed (`SU...`) from a file, as `$AIRLOCK_HOME/creds/<user>.nk` holds it."""
    try:
        seed = Path(path).read_text().strip()
    except OSError as error:
        raise UnavailableError(f"cannot read the NATS credentials {path}: {error}") from error
    if not seed.startswith("SU"):
        raise UnavailableError(f"{path} does not hold a NATS user nkey seed")
    return seed
