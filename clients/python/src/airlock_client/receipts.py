"""Verifying an audit receipt offline, as the Rust client does (`RunResult::verify_receipt`):
the checkpoint is signed by a trusted auditor key (after a key rotation, by a key not retired
before the entry was logged), the proof puts the entry it carries in that checkpoint's tree,
that entry is this request's terminal event at a place the receipt lists, and **every field
the result carries** (outcome, exit code, stdout, stderr, and the rest an application reads)
is the logged one. When the result knows the request digest of what its client submitted, the
logged approval must be for that code and those inputs.

See "Receipts (tlog-proof)" and "What a client's receipt check proves" in `docs/audit-log.md`.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import blake3

from .digest import execution_digest
from .errors import ReceiptError, WireError
from .keys import KeyFormatError, VerifierKey
from .keyset import TrustedKey
from .results import Result
from .tlog import Checkpoint, TlogProof, leaf_hash
from .wire import pack, unpack

#: The entry format this client reads.
ENTRY_VERSION = 1
#: Byte fields of a terminal event that the auditor keeps by digest when they are large.
TERMINAL_BLOB_SLOTS = ("stdout", "stderr")
#: The blob slot of a whole event too large for its entry.
EVENT_SLOT = "event"
#: The fields of a `Result` an application reads, each compared with the logged event, in
#: the order the Rust client compares them (the first that differs is named).
RESULT_FIELDS = (
    "outcome",
    "exit_code",
    "stdout",
    "raw_stdout",
    "stderr",
    "raw_stderr",
    "violation",
    "verdict",
    "findings",
    "decision",
    "approver",
    "quota",
    "runtime",
    "network",
    "read_only_hosts",
    "usage",
    "reason",
    "refusal",
    "files",
    "files_unavailable",
)

#: What `verify_receipt` takes as the auditor's keys: a verifier key's text (as `airlock audit
#: pubkey` prints it), a parsed one, or a key of the key set with its retirement
#: (`Home.auditor_keys()`, `client.audit_keys`).
AuditKey = str | VerifierKey | TrustedKey


class ResultMismatchError(ReceiptError):
    """The receipt is genuine, but the result says something else than the log: `field` names
    the first field that differs (`stdout`, `exit_code`, `outcome`, `code`, ...)."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"the result's {field} is not the logged one ({detail})")
        self.field = field


def trusted_keys(keys: Iterable[AuditKey]) -> list[TrustedKey]:
    """The keys as verifier keys with their retirement: text is parsed, a bare verifier key is
    trusted without end, a key set's key keeps its retirement."""
    parsed: list[TrustedKey] = []
    for key in keys:
        if isinstance(key, TrustedKey):
            parsed.append(key)
        elif isinstance(key, VerifierKey):
            parsed.append(TrustedKey(key))
        else:
            try:
                parsed.append(TrustedKey(VerifierKey.parse(key)))
            except KeyFormatError as error:
                raise ReceiptError(f"bad auditor key {key!r}: {error}") from error
    return parsed


def verify_receipt(result: Result, keys: Sequence[AuditKey]) -> Checkpoint:
    """Checks `result.receipt` against the auditor's keys; returns the signed checkpoint.

    Raises ReceiptError when the receipt is missing, malformed, not signed by a trusted key (or
    only by keys retired before the entry was logged), does not include its entry, or its entry
    is not this request's terminal event; ResultMismatchError (a ReceiptError) naming the field
    when the receipt is genuine but a field of the result, or the code it was submitted with,
    is not what the log holds.
    """
    trusted = trusted_keys(keys)
    if not trusted:
        raise ReceiptError("no auditor key to verify the receipt with")
    receipt = result.receipt
    if receipt is None:
        why = f": {result.receipt_pending}" if result.receipt_pending else ""
        raise ReceiptError(f"the result of {result.request_id} has no receipt{why}")
    if receipt.request_id != result.request_id:
        raise ReceiptError(f"the receipt is for {receipt.request_id}, not {result.request_id}")
    proof = TlogProof.parse(receipt.proof)
    if proof.checkpoint_text != receipt.checkpoint:
        raise ReceiptError("the receipt's checkpoint is not the one its proof is against")
    if proof.extra is None:
        raise ReceiptError("the proof carries no entry")
    checkpoint, signers = proof.verify([k.key for k in trusted], leaf_hash(proof.extra))
    entry = _entry(proof.extra)
    _check_signers_were_in_use(entry, signers, trusted)
    _check_entry_place(entry, proof.index, receipt.entries, checkpoint.size, result.request_id)
    if result.audit != receipt.entries:
        raise ResultMismatchError("audit", f"entries {result.audit}, the receipt lists {receipt.entries}")
    if result.checkpoint != receipt.checkpoint:
        raise ResultMismatchError("checkpoint", "it is not the receipt's")
    logged = _logged_terminal(entry, result)
    _compare_fields(logged, result)
    _check_code(logged, result)
    return checkpoint


def _entry(data: bytes) -> dict[str, Any]:
    try:
        entry = unpack(data)
    except WireError as error:
        raise ReceiptError(f"the proof's entry does not decode: {error.reason}") from error
    if not isinstance(entry, dict):
        raise ReceiptError("the proof's entry is not a map")
    if entry.get("v") != ENTRY_VERSION:
        raise ReceiptError(f"the entry has format version {entry.get('v')!r}, not {ENTRY_VERSION}")
    return entry


def _check_signers_were_in_use(entry: dict[str, Any], signers: list[VerifierKey], trusted: list[TrustedKey]) -> None:
    """After a rotation the retired key vouches only for what was logged before it retired."""
    time_ms = entry.get("time_ms")
    if not isinstance(time_ms, int) or isinstance(time_ms, bool):
        raise ReceiptError("the entry has no time")
    if not any(k.key in signers and k.could_cover(time_ms) for k in trusted):
        names = ", ".join(f"{k.name}+{k.key_id:08x}" for k in signers)
        raise ReceiptError(
            f"the checkpoint is signed only by keys retired before entry {entry.get('seq')} was logged ({names})"
        )


def _check_entry_place(entry: dict[str, Any], index: int, entries: list[int], size: int, request_id: str) -> None:
    if entry.get("seq") != index:
        raise ReceiptError(f"the entry says it is entry {entry.get('seq')!r}, the proof says {index}")
    if entry.get("kind") != "terminal":
        raise ReceiptError(f"the proven entry is a {entry.get('kind')!r} entry, not the terminal one")
    if entry.get("request_id") != request_id:
        raise ReceiptError(f"the proven entry belongs to request {entry.get('request_id')!r}")
    if index not in entries:
        raise ReceiptError(f"the receipt does not list entry {index} among the request's entries")
    if any(b <= a for a, b in zip(entries, entries[1:])) or entries[-1] >= size:
        raise ReceiptError("the receipt's entries are not in log order within the checkpoint")


def _slot_reference(entry: dict[str, Any], slot: str) -> dict[str, Any] | None:
    """Where the log keeps a byte field by digest only: a blob, or withheld (digest and size,
    no content)."""
    for table in ("blobs", "withheld"):
        references = entry.get(table) or {}
        if not isinstance(references, dict):
            raise ReceiptError(f"the entry's {table} is not a map")
        reference = references.get(slot)
        if reference is not None:
            if not isinstance(reference, dict):
                raise ReceiptError(f"the entry's {table}[{slot!r}] is not a map")
            return reference
    return None


def _logged_terminal(entry: dict[str, Any], result: Result) -> dict[str, Any]:
    """The logged terminal event's data, with the output the log keeps by digest filled in from
    the result once its length and BLAKE3 digest are checked to be the logged ones."""
    outputs = {"stdout": result.raw_stdout, "stderr": result.raw_stderr}
    by_digest = []
    for slot in TERMINAL_BLOB_SLOTS:
        reference = _slot_reference(entry, slot)
        if reference is None:
            continue
        content = outputs[slot]
        if reference.get("len") != len(content) or reference.get("b3") != blake3.blake3(content).hexdigest():
            raise ResultMismatchError(
                slot, f"{len(content)} bytes, the log holds {reference.get('len')!r} bytes with another digest"
            )
        by_digest.append(slot)
    event = entry.get("event")
    if event is None:
        return _event_kept_by_digest(entry, result, by_digest)
    if not isinstance(event, dict) or event.get("kind") != "terminal" or not isinstance(event.get("data"), dict):
        raise ReceiptError("the logged event is not a terminal event")
    logged = dict(event["data"])
    for slot in by_digest:
        logged[slot] = outputs[slot]
    logged_files = logged.get("files") or []
    if not isinstance(logged_files, list):
        raise ReceiptError("the logged terminal event's files are not a list")
    mine = {f.name: f.content for f in result.files}
    filled = []
    for logged_file in logged_files:
        if not isinstance(logged_file, dict):
            raise ReceiptError("a logged file is not a map")
        logged_file = dict(logged_file)
        name = logged_file.get("name")
        reference = _slot_reference(entry, f"out/{name}")
        if reference is not None:
            # Kept by digest: this result's copy of the content must be the logged one.
            content = mine.get(str(name), b"")
            if reference.get("len") != len(content) or reference.get("b3") != blake3.blake3(content).hexdigest():
                raise ResultMismatchError(
                    "files", f"out/{name}: {len(content)} bytes, the log holds {reference.get('len')!r} with another digest"
                )
            logged_file["content"] = content
        filled.append(logged_file)
    if logged_files:
        logged["files"] = filled
    return logged


def _event_kept_by_digest(entry: dict[str, Any], result: Result, by_digest: list[str]) -> dict[str, Any]:
    """An event too large for its entry is a blob named by its digest: the result's own
    terminal event (emptied of the output kept by digest, as the auditor empties it) must hash
    to it."""
    reference = _slot_reference(entry, EVENT_SLOT)
    if reference is None:
        raise ReceiptError("the entry holds no event")
    if not result.terminal:
        raise ResultMismatchError(
            "terminal event",
            "the log keeps it by digest only and this result does not carry it (save results with to_json())",
        )
    expected = dict(result.terminal)
    for slot in by_digest:
        expected[slot] = b""
    if reference.get("b3") != blake3.blake3(pack({"kind": "terminal", "data": expected})).hexdigest():
        raise ResultMismatchError("terminal event", "its digest is not the logged event's")
    return dict(result.terminal)


def _compare_fields(logged: dict[str, Any], result: Result) -> None:
    """Each field an application reads must be the one read from the logged event."""
    try:
        proven = Result.from_terminal(result.request_id, logged, result.receipt)
    except WireError as error:
        raise ReceiptError(f"the logged terminal event does not decode: {error.reason}") from error
    for name in RESULT_FIELDS:
        mine, theirs = getattr(result, name), getattr(proven, name)
        if mine != theirs:
            # `raw_stdout` is stdout's exact bytes: to the reader, the same field.
            raise ResultMismatchError(name.removeprefix("raw_"), _difference(mine, theirs))
    # The event the result was read from, when it still has it (a result from the wire, not
    # from JSON), must be the logged one whole: no field of it escapes the check.
    if result.terminal and result.terminal != logged:
        raise ResultMismatchError("terminal event", "the event it was read from differs from the logged one")


def _difference(mine: Any, logged: Any) -> str:
    if isinstance(mine, (str, bytes)) and isinstance(logged, (str, bytes)):
        return f"{len(mine)} {'bytes' if isinstance(mine, bytes) else 'characters'} against {len(logged)}"
    return f"{mine!r} against {logged!r}"


def _check_code(logged: dict[str, Any], result: Result) -> bool:
    """With the request digest known and an approval logged: the approval's execution digest
    must be this request's with the grant it names. Returns whether the code was checked."""
    summary = logged.get("decision")
    if result.request_digest is None or not isinstance(summary, dict):
        return False
    approved, quota, limits = summary.get("execution_digest"), summary.get("quota"), summary.get("limits")
    if approved is None or quota is None or not isinstance(limits, dict):
        return False
    grant = {
        "quota": quota,
        "limits": limits,
        "runtime": summary.get("runtime"),
        "network": summary.get("network"),
        "read_only_hosts": summary.get("read_only_hosts") or [],
    }
    if execution_digest(result.request_digest, grant) != approved:
        raise ResultMismatchError(
            "code", "the code that was approved and ran is not the code this result was submitted with"
        )
    return True
