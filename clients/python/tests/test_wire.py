"""The envelope codec against the checked-in contract: every vector in `schemas/vectors` decodes
to its JSON meaning, and that meaning encodes back to exactly its bytes."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import msgpack
import pytest

from airlock_client import subjects
from airlock_client.errors import WireError
from airlock_client.results import OutputChunk, Result
from airlock_client.wire import MAX_MESSAGE_BYTES, Envelope, execution_request, request_id_for, trace_id_of, uuid7

from .conftest import SCHEMAS

VECTORS = sorted((SCHEMAS / "vectors").glob("*.msgpack"))
SCHEMA = json.loads((SCHEMAS / "envelope.schema.json").read_text())


def test_there_are_vectors_to_check() -> None:
    assert len(VECTORS) >= 6, f"expected the schema vectors in {SCHEMAS / 'vectors'}"


def as_meaning(value: Any) -> Any:
    """Decoded values as the JSON vectors write them: byte strings become arrays of integers."""
    if isinstance(value, bytes):
        return list(value)
    if isinstance(value, dict):
        return {k: as_meaning(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_meaning(v) for v in value]
    return value


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _is_bytes(schema: dict[str, Any]) -> bool:
    items = schema.get("items")
    return schema.get("type") == "array" and isinstance(items, dict) and items.get("format") == "uint8"


def from_meaning(value: Any, schema: dict[str, Any]) -> Any:
    """A JSON meaning back to wire values, guided by the JSON Schema: where the schema says
    bytes, the array of integers becomes bytes."""
    schema = _resolve(schema)
    if _is_bytes(schema):
        return bytes(value)
    for alternative_key in ("oneOf", "anyOf"):
        if alternative_key in schema:
            for alternative in schema[alternative_key]:
                if _matches(value, _resolve(alternative)):
                    return from_meaning(value, alternative)
            return value
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        return {
            k: from_meaning(v, properties.get(k) or (extra if isinstance(extra, dict) else {}))
            for k, v in value.items()
        }
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, list):  # tuples
            return [from_meaning(v, s) for v, s in zip(value, items)]
        return [from_meaning(v, items if isinstance(items, dict) else {}) for v in value]
    return value


def _matches(value: Any, schema: dict[str, Any]) -> bool:
    """Whether `value` is of the alternative `schema` (by type and constant tags, enough to pick
    between the contract's variants)."""
    kind = schema.get("type")
    if value is None:
        return kind == "null" or (isinstance(kind, list) and "null" in kind)
    if isinstance(value, dict):
        if kind not in ("object", None):
            return False
        for name, prop in schema.get("properties", {}).items():
            if "const" in prop and value.get(name) != prop["const"]:
                return False
        return all(name in value for name in schema.get("required", []))
    return kind != "null"


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_vector_decodes_to_its_meaning(path: Path) -> None:
    meaning = json.loads(path.with_suffix(".json").read_text())
    envelope = Envelope.decode(path.read_bytes())
    assert as_meaning(envelope.to_wire()) == meaning


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_vector_meaning_encodes_to_its_bytes(path: Path) -> None:
    meaning = json.loads(path.with_suffix(".json").read_text())
    wire = from_meaning(meaning, SCHEMA)
    envelope = Envelope(
        id=wire["id"],
        request_id=wire["request_id"],
        producer=wire["producer"],
        time_ms=wire["time_ms"],
        kind=wire["event"]["kind"],
        data=wire["event"]["data"],
        schema=wire["schema"],
    )
    assert envelope.encode() == path.read_bytes()


def test_the_submission_this_client_builds_is_the_vectors_bytes() -> None:
    """Built with the client's own request builder, not from the vector's meaning."""
    path = SCHEMAS / "vectors" / "submitted.msgpack"
    vector = Envelope.decode(path.read_bytes())
    body = execution_request(
        b"print('hello from airlock')\n",
        language="python",
        origin="generated",
        trust="unknown",
        args=["--n", "3"],
        env=None,
        stdin=None,
        packages=[],
        revises=None,
        deadline_ms=None,
        label="hello.py",
    )
    built = Envelope(id=vector.id, request_id=vector.request_id, producer="mai", time_ms=vector.time_ms,
                     kind="submitted", data=body)
    assert built.encode() == path.read_bytes()


def test_terminal_vectors_read_as_results() -> None:
    finished = Envelope.decode((SCHEMAS / "vectors" / "terminal-finished.msgpack").read_bytes())
    result = Result.from_terminal(finished.request_id, finished.data, None)
    assert result.outcome == "finished"
    assert result.exit_code == finished.data["exit_code"]
    assert result.raw_stdout == finished.data["stdout"]
    violated = Envelope.decode((SCHEMAS / "vectors" / "terminal-memory-violation.msgpack").read_bytes())
    result = Result.from_terminal(violated.request_id, violated.data, None)
    assert result.violation is not None and result.violation.kind == "memory"
    output = Envelope.decode((SCHEMAS / "vectors" / "output.msgpack").read_bytes())
    chunk = OutputChunk.from_wire(output.data)
    assert chunk.data == output.data["data"] and chunk.seq == output.data["seq"]


def test_decode_on_checks_the_subject() -> None:
    data = (SCHEMAS / "vectors" / "terminal-finished.msgpack").read_bytes()
    envelope = Envelope.decode(data)
    assert Envelope.decode_on(subjects.terminal_subject(envelope.request_id), data) == envelope
    with pytest.raises(WireError, match="on the output subject"):
        Envelope.decode_on(subjects.output_subject(envelope.request_id), data)
    with pytest.raises(WireError, match="on the subject of request"):
        Envelope.decode_on(subjects.terminal_subject("another-request"), data)


def test_other_versions_garbage_and_oversized_messages_are_refused() -> None:
    wire = Envelope.decode((SCHEMAS / "vectors" / "output.msgpack").read_bytes()).to_wire()
    wire["schema"] = 2
    with pytest.raises(WireError, match="schema version 2"):
        Envelope.decode(msgpack.packb(wire, use_bin_type=True))
    for garbage in (b"", b"\xc1garbage", msgpack.packb([1, 2, 3]), msgpack.packb({"schema": 1})):
        with pytest.raises(WireError):
            Envelope.decode(garbage)
    with pytest.raises(WireError, match="at most"):
        Envelope.decode(b"\x00" * (MAX_MESSAGE_BYTES + 1))


def test_request_ids_are_uuid_v7_and_subject_tokens() -> None:
    first, second = uuid7(), uuid7()
    assert first != second
    parsed = uuid.UUID(first)
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert re.fullmatch(r"[0-9a-f-]{36}", first)
    # Time-ordered: the first 48 bits are milliseconds, so ids sort by creation time.
    assert first[:8] <= second[:8]


def test_submission_subjects_and_message_ids() -> None:
    local, mid = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "0193a1b2-0000-7000-8000-000000000001"
    rid = request_id_for("mai", local)
    assert rid == f"mai.{local}"
    assert subjects.submit_subject(rid) == f"airlock.submit.mai.{local}"
    assert subjects.submit_subject(request_id_for("batch", local)) == f"airlock.submit.batch.{local}"
    assert subjects.submission_msg_id(rid, mid) == mid
    assert subjects.parse_event_subject(subjects.submit_subject(rid)) == ("submitted", rid)
    assert subjects.parse_event_subject(f"airlock.submit.{local}") is None, "a submission names its client"
    assert subjects.parse_event_subject(f"airlock.terminal.{rid}") == ("terminal", rid)
    assert subjects.parse_event_subject(f"airlock.terminal.{local}") == ("terminal", local), "an id of old logs"
    assert subjects.parse_event_subject("airlock.terminal.a.b.c") is None
    assert subjects.parse_event_subject("airlock.audit.entry.x") is None
    with pytest.raises(ValueError):
        request_id_for("Mai", local)
    with pytest.raises(ValueError):
        request_id_for("mai", "a.b")
    assert subjects.inbox_prefix("mai") == "_INBOX_mai"


def test_request_shapes_are_checked_before_sending() -> None:
    common: dict[str, Any] = dict(origin="generated", trust="unknown", args=[], env=None, stdin=None,
                                  packages=[], revises=None, deadline_ms=None, label=None)
    with pytest.raises(ValueError, match="language"):
        execution_request(b"x", language="cobol", **common)
    with pytest.raises(ValueError, match="trust"):
        execution_request(b"x", language="python", **{**common, "trust": "root"})
    with pytest.raises(TypeError, match="args"):
        execution_request(b"x", language="python", **{**common, "args": "not a list"})
    body = execution_request(b"x", language="bash", **{**common, "env": {"B": "2", "A": "1"}})
    assert list(body["inputs"]["env"]) == ["A", "B"]


def test_traceparents_are_checked() -> None:
    assert trace_id_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace_id_of("00-00000000000000000000000000000000-00f067aa0ba902b7-01") is None
    assert trace_id_of("not a trace") is None
