"""What a hostile Mai needs to speak Airlock's wire protocol by hand: envelopes in MessagePack,
subjects, and a running stack started by the tests themselves.

Deliberately not the Python client (clients/python): a compromised Mai does not use the client's
checks, so neither do these tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import nats
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

REPO = Path(__file__).resolve().parents[2]
AIRLOCK = os.environ.get("AIRLOCK_BIN", str(REPO / "target" / "debug" / "airlock"))
EVENTS = "AIRLOCK"
SCHEMA = 1


def new_id(client: str = "mai") -> str:
    """A fresh request id of `client`: `<client>.<local>` (a client may only submit under its
    own name, so ids are tenants' own)."""
    return f"{client}.{uuid.uuid4()}"


def named_id(name: str, client: str = "mai") -> str:
    """A request id that says what the test made it for."""
    return f"{client}.{name}-{short()}"


def short() -> str:
    return uuid.uuid4().hex[:8]


def request(code: bytes | str, *, language: str = "python", origin: str = "generated",
            trust: str = "unknown", args: list[str] | None = None, env: dict[str, str] | None = None,
            stdin: bytes = b"", packages: list[str] | None = None, label: str | None = "t.py",
            **extra: Any) -> dict[str, Any]:
    """An ExecutionRequest as the wire carries it (fields may be overridden or added)."""
    body = {
        "language": language,
        "code": code.encode() if isinstance(code, str) else code,
        "origin": origin,
        "trust": trust,
        "inputs": {"args": args or [], "env": env or {}, "stdin": stdin},
        "packages": packages or [],
        "revises": None,
        "deadline_ms": None,
        "label": label,
    }
    body.update(extra)
    return body


def envelope(rid: str, event: dict[str, Any], *, producer: Any = "mai", schema: int = SCHEMA,
             message_id: str | None = None) -> bytes:
    return msgpack.packb({
        "schema": schema,
        "id": message_id or str(uuid.uuid4()),
        "request_id": rid,
        "producer": producer,
        "time_ms": int(time.time() * 1000),
        "event": event,
    }, use_bin_type=True)


def submission(rid: str, req: dict[str, Any], **kw: Any) -> bytes:
    return envelope(rid, {"kind": "submitted", "data": req}, **kw)


def decode(payload: bytes) -> dict[str, Any]:
    return msgpack.unpackb(payload, raw=False)


@dataclass
class Stack:
    """`airlock up` in a temporary home, stopped at the end."""

    home: Path
    process: subprocess.Popen[bytes]
    nats_url: str = ""
    clients: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(cls, extra: dict[str, str] | None = None) -> "Stack":
        home = Path(tempfile.mkdtemp(prefix="airlock-hostile-"))
        subprocess.run([AIRLOCK, "--home", str(home), "init"], check=True, capture_output=True)
        config = home / "airlock.toml"
        text = config.read_text()
        for section, body in (extra or {}).items():
            # A header at the start of a line: the template also has commented-out ones.
            header = f"\n[{section}]\n"
            if header in text:
                text = text.replace(header, header + body.rstrip() + "\n", 1)
            else:
                text += f"{header}{body.rstrip()}\n"
        config.write_text(text)
        log = open(home / "up.log", "wb")
        process = subprocess.Popen([AIRLOCK, "--home", str(home), "up", "--port", "0"],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        stack = cls(home=home, process=process)
        status = subprocess.run([AIRLOCK, "--home", str(home), "status", "--wait", "120"],
                                capture_output=True)
        if status.returncode != 0:
            stack.stop()
            raise RuntimeError("the stack did not come up:\n" + (home / "up.log").read_text()[-4000:])
        stack.nats_url = json.loads((home / "stack.json").read_text())["nats_url"]
        return stack

    def seed(self, user: str) -> str:
        return (self.home / "creds" / f"{user}.nk").read_text().strip()

    async def connect(self, user: str, **kw: Any) -> nats.NATS:
        errors: list[str] = []

        async def on_error(e: Exception) -> None:
            errors.append(str(e))

        nc = await nats.connect(self.nats_url, nkeys_seed_str=self.seed(user),
                                inbox_prefix=f"_INBOX_{user}".encode(), error_cb=on_error,
                                allow_reconnect=True, **kw)
        nc.permission_errors = errors  # type: ignore[attr-defined]
        return nc

    def airlock(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([AIRLOCK, "--home", str(self.home), *args], capture_output=True,
                              text=True, timeout=timeout)

    def service_pid(self, command: str) -> int:
        return int(json.loads((self.home / "stack.json").read_text())["services"][command])

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.home, ignore_errors=True)


async def submit(nc: nats.NATS, rid: str, payload: bytes, *,
                 headers: dict[str, str] | None = None, subject: str | None = None) -> Any:
    """Publishes to JetStream as a client would (`airlock.submit.<client>.<local>`, the request
    id's own subject); returns the stream's ack (or raises)."""
    js = nc.jetstream()
    return await js.publish(subject or f"airlock.submit.{rid}", payload,
                            headers=headers, timeout=10)


async def terminal(nc: nats.NATS, rid: str, timeout: float = 90) -> dict[str, Any]:
    """The request's terminal event, read from the stream by direct get (as Mai may)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            reply = await nc.request(f"$JS.API.DIRECT.GET.{EVENTS}.airlock.terminal.{rid}", b"", timeout=2)
            if reply.data and not (reply.headers or {}).get("Status"):
                return decode(reply.data)
        except Exception:
            pass
        await asyncio.sleep(0.2)
    raise TimeoutError(f"no terminal event for {rid} within {timeout} s")


async def messages_on(admin: nats.NATS, filters: list[str]) -> list[tuple[str, dict[str, Any] | None]]:
    """Every message of the events stream on these subject filters, in stream order."""
    js = admin.jetstream()
    consumer = await js.add_consumer(EVENTS, config=ConsumerConfig(
        deliver_policy=DeliverPolicy.ALL, filter_subjects=filters, inactive_threshold=60.0,
        ack_policy=AckPolicy.NONE))
    pending = consumer.num_pending
    psub = await js.pull_subscribe_bind(consumer.name, stream=EVENTS)
    found: list[tuple[str, dict[str, Any] | None]] = []
    while len(found) < pending:
        try:
            batch = await psub.fetch(min(pending - len(found), 256), timeout=5)
        except Exception:
            break
        for m in batch:
            try:
                found.append((m.subject, decode(m.data)))
            except Exception:
                found.append((m.subject, None))
    await psub.unsubscribe()
    return found


async def events_of(admin: nats.NATS, rid: str) -> list[tuple[str, dict[str, Any] | None]]:
    """Every message of the events stream naming `rid`, in order: (subject, envelope or None)."""
    return await messages_on(admin, [f"airlock.*.{rid}", f"airlock.*.*.{rid}", f"airlock.*.*.*.{rid}"])


def kinds(events: list[tuple[str, dict[str, Any] | None]]) -> list[str]:
    return [e["event"]["kind"] for _, e in events if e is not None]


async def settle(admin: nats.NATS, rid: str, seconds: float = 3.0) -> list[tuple[str, dict[str, Any] | None]]:
    """The request's events once nothing more arrives for a moment (late events would show)."""
    await asyncio.sleep(seconds)
    return await events_of(admin, rid)
