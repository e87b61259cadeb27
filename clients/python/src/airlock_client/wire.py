"""The envelope every message travels in: MessagePack with named fields, as `schemas/` describes.

Decoded values are plain Python: maps become dicts (in wire order), MessagePack `bin` becomes
`bytes`, `str` becomes `str`. Encoding writes dicts in their insertion order, which for the
messages built here is the field order of `schemas/envelope.schema.json`, so the bytes are the
ones the Rust services write (the test vectors check it).
"""

from __future__ import annotations

import os
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import msgpack

from . import subjects
from .errors import WireError
from .types import LANGUAGES, NETWORKS, ORIGINS, TRUST_LEVELS, check_argument

#: The schema version this client speaks; a message of any other version is refused.
SCHEMA_VERSION = 1
#: Largest message the bus carries.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024

#: The producer of every submission: the services learn which client submitted from the
#: subject, never from the body.
SUBMISSION_PRODUCER = "mai"


def now_ms() -> int:
    """Milliseconds since the Unix epoch, the unit of every timestamp on the wire."""
    return time.time_ns() // 1_000_000


def uuid7() -> str:
    """A fresh, time-ordered UUID (version 7, RFC 9562), the form of every id on the wire.

    Python gains `uuid.uuid7` in 3.14; until then the layout is built here: 48 bits of Unix
    milliseconds, then 74 random bits around the version and variant fields.
    """
    builtin = getattr(uuid, "uuid7", None)
    if builtin is not None:
        return str(builtin())
    value = (now_ms() & ((1 << 48) - 1)) << 80
    value |= secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 9562 variant
    return str(uuid.UUID(int=value))


def new_traceparent() -> str:
    """A W3C `traceparent` starting a new trace, sampled, for a request whose caller has none."""
    return f"00-{os.urandom(16).hex()}-{os.urandom(8).hex()}-01"


def trace_id_of(traceparent: str) -> str | None:
    """The 32-hex-digit trace id of a `traceparent`, or None when it is not version 00."""
    parts = traceparent.split("-")
    if len(parts) != 4 or parts[0] != "00" or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        int(parts[1], 16)
        int(parts[2], 16)
    except ValueError:
        return None
    if parts[1] == "0" * 32 or parts[2] == "0" * 16:
        return None
    return parts[1]


def is_token(value: str) -> bool:
    """Whether `value` may be an id: a NATS subject token of `[A-Za-z0-9_-]{1,64}`."""
    return 0 < len(value) <= 64 and all(c.isascii() and (c.isalnum() or c in "-_") for c in value)


def is_client_name(value: str) -> bool:
    """Whether `value` may be a client's NATS user name: lowercase letters, digits, `-` and `_`,
    starting with a letter, at most 32 characters."""
    return (
        0 < len(value) <= 32
        and value[0].isascii()
        and value[0].islower()
        and all(c.isascii() and (c.islower() or c.isdigit() or c in "-_") for c in value)
    )


def is_request_id(value: str) -> bool:
    """Whether `value` may be a request id: `<client>.<local>` (a client name, a dot, a token),
    or a bare token as logs written before ids named their client hold."""
    client, dot, local = value.partition(".")
    if not dot:
        return is_token(value)
    return is_client_name(client) and is_token(local)


def request_id_for(client: str, local: str) -> str:
    """The id `<client>.<local>` a client submits under: the server lets a client submit only
    under its own name, so no client can choose an id another client will use."""
    if not is_client_name(client):
        raise ValueError(f"{client!r} is not a client name")
    if not is_token(local) or local == "unknown":
        raise ValueError(f"{local!r} is not a request id token")
    return f"{client}.{local}"


@dataclass(frozen=True)
class Envelope:
    """One message: its version, ids, producer, time and the event (`kind` and `data`)."""

    id: str
    request_id: str
    producer: str
    time_ms: int
    kind: str
    data: Any
    schema: int = SCHEMA_VERSION

    @classmethod
    def new(cls, request_id: str, producer: str, kind: str, data: Any) -> Envelope:
        return cls(id=uuid7(), request_id=request_id, producer=producer, time_ms=now_ms(), kind=kind, data=data)

    def to_wire(self) -> dict[str, Any]:
        """The envelope as the map that is encoded, in the schema's field order."""
        return {
            "schema": self.schema,
            "id": self.id,
            "request_id": self.request_id,
            "producer": self.producer,
            "time_ms": self.time_ms,
            "event": {"kind": self.kind, "data": self.data},
        }

    def encode(self) -> bytes:
        data = msgpack.packb(self.to_wire(), use_bin_type=True)
        if len(data) > MAX_MESSAGE_BYTES:
            raise WireError(f"message is {len(data)} bytes; at most {MAX_MESSAGE_BYTES} are accepted")
        return data

    @classmethod
    def decode(cls, data: bytes) -> Envelope:
        """Reads an envelope, refusing other schema versions and malformed bodies."""
        if len(data) > MAX_MESSAGE_BYTES:
            raise WireError(f"message is {len(data)} bytes; at most {MAX_MESSAGE_BYTES} are accepted")
        value = unpack(data)
        if not isinstance(value, dict):
            raise WireError("malformed message: not a map")
        schema = value.get("schema")
        if not isinstance(schema, int) or isinstance(schema, bool):
            raise WireError("malformed message: no schema version")
        if schema != SCHEMA_VERSION:
            raise WireError(f"message has schema version {schema}; this client speaks version {SCHEMA_VERSION}")
        event = value.get("event")
        if not isinstance(event, dict) or not isinstance(event.get("kind"), str) or "data" not in event:
            raise WireError("malformed message: no event")
        fields: dict[str, str] = {}
        for name in ("id", "request_id", "producer"):
            field = value.get(name)
            if not isinstance(field, str):
                raise WireError(f"malformed message: {name} is not a string")
            fields[name] = field
        if not is_token(fields["id"]) or not is_request_id(fields["request_id"]):
            raise WireError("malformed message: an id is not [A-Za-z0-9_-]{1,64}")
        time_ms = value.get("time_ms")
        if not isinstance(time_ms, int) or isinstance(time_ms, bool):
            raise WireError("malformed message: time_ms is not an integer")
        return cls(
            id=fields["id"],
            request_id=fields["request_id"],
            producer=fields["producer"],
            time_ms=time_ms,
            kind=event["kind"],
            data=event["data"],
            schema=schema,
        )

    @classmethod
    def decode_on(cls, subject: str, data: bytes) -> Envelope:
        """Decodes a message and checks that the kind and request id are those its subject names."""
        envelope = cls.decode(data)
        named = subjects.parse_event_subject(subject)
        if named is None:
            raise WireError(f"subject {subject!r} is not an event subject")
        kind, request_id = named
        if kind != envelope.kind:
            raise WireError(f"a {envelope.kind} event on the {kind} subject {subject!r}")
        if request_id != envelope.request_id:
            raise WireError(f"request {envelope.request_id} on the subject of request {request_id}")
        return envelope


def unpack(data: bytes) -> Any:
    """MessagePack to Python values, with `bin` as bytes and `str` as str (invalid UTF-8 refused)."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException) as error:
        raise WireError(f"malformed message: {error}") from error


def pack(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def execution_request(
    code: bytes,
    *,
    language: str,
    origin: str,
    trust: str,
    args: tuple[str, ...] | list[str],
    env: Mapping[str, str] | None,
    stdin: bytes | None,
    packages: tuple[str, ...] | list[str],
    revises: str | None,
    deadline_ms: int | None,
    label: str | None,
    limits: Mapping[str, int] | None = None,
    network: str = "none",
    files: Sequence[tuple[str, bytes]] = (),
    workspace: str | None = None,
) -> dict[str, Any]:
    """The `submitted` event's data, in the schema's field order.

    Only the shape is checked here (the names of enumerations, types): the services validate
    everything else, and a request they refuse ends with a `RefusedError` carrying their reason,
    so the rules live in one place.
    """
    check_argument("language", language, LANGUAGES)
    check_argument("origin", origin, ORIGINS)
    check_argument("trust", trust, TRUST_LEVELS)
    check_argument("network", network, NETWORKS)
    if not isinstance(code, bytes):
        raise TypeError("code must be bytes or str")
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise TypeError("args must be a sequence of str")
    if isinstance(packages, str) or not all(isinstance(p, str) for p in packages):
        raise TypeError("packages must be a sequence of str")
    environment = dict(env or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in environment.items()):
        raise TypeError("env must map str to str")
    if revises is not None and not is_request_id(revises):
        raise ValueError(f"revises {revises!r} is not a request id")
    request: dict[str, Any] = {
        "language": language,
        "code": code,
        "origin": origin,
        "trust": trust,
        "inputs": {
            "args": list(args),
            # The services keep the environment in a sorted map; the same order here gives the
            # same bytes.
            "env": dict(sorted(environment.items())),
            "stdin": stdin or b"",
        },
        "packages": list(packages),
        "revises": revises,
        "deadline_ms": deadline_ms,
        "label": label,
    }
    if files:
        if not all(isinstance(name, str) and isinstance(content, bytes) for name, content in files):
            raise TypeError("files must be (name, bytes) pairs")
        request["inputs"]["files"] = [{"name": name, "content": content} for name, content in files]
    # Absent unless asked, as the services write them, in the schema's order.
    if network != "none":
        request["network"] = network
    if limits:
        request["limits"] = dict(limits)
    if workspace is not None:
        request["workspace"] = workspace
    return request
