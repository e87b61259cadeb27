"""The asyncio client: `AsyncClient`, Mai's side (submit, follow, verify).

    async with await AsyncClient.connect() as client:
        result = await client.run("print('hello')")

The request it returns is `request.AsyncRequest`; the operator's side is
`operator.AsyncOperator` (both importable from here too).
"""

from __future__ import annotations

import asyncio
import os
from typing import Mapping, Sequence, Unpack

from . import subjects
from .connection import Connection, open_connection
from .errors import AirlockError, ReceiptError, UnavailableError
from .operator import AsyncOperator
from .digest import request_digest
from .home import Home
from .receipts import AuditKey
from .receipts import verify_receipt as _verify_receipt
from .request import (
    DEFAULT_WAIT,
    RECEIPT_WAIT,
    AsyncRequest,
    cancel_request,
    fetch_receipt,
    receipt_pending_reason,
    resolve_wait,
)
from .results import Result
from .session import AsyncSession
from .status import StatusCallback
from .submission import Submission, SubmissionFields
from .wire import SUBMISSION_PRODUCER, Envelope, is_request_id, new_traceparent, request_id_for, trace_id_of, uuid7

__all__ = ["AsyncClient", "AsyncOperator", "AsyncRequest", "DEFAULT_WAIT", "verify_receipt"]


class AsyncClient:
    """Mai's side of Airlock over asyncio: submit code, follow its status and output, read its
    result and verify its audit receipt.

    `connect()` finds the running stack through `$AIRLOCK_HOME` as the `airlock` command does;
    `url` and `creds` (the path of an nkey seed file) name one explicitly.
    """

    def __init__(self, connection: Connection, audit_keys: Sequence[AuditKey] | Home) -> None:
        self._connection = connection
        # Keys read from a home are read again at each use: after `airlock keys rotate auditor`
        # a client that stays connected trusts the new key too, and keeps trusting the old one
        # for what it signed.
        self._audit_keys: list[AuditKey] | Home = audit_keys if isinstance(audit_keys, Home) else list(audit_keys)

    @classmethod
    async def connect(
        cls,
        home: str | os.PathLike[str] | None = None,
        url: str | None = None,
        creds: str | os.PathLike[str] | None = None,
        *,
        user: str = subjects.DEFAULT_USER,
        audit_keys: Sequence[AuditKey] | None = None,
    ) -> AsyncClient:
        """Connects as client `user` (default `mai`) to the stack of `home` (default
        `$AIRLOCK_HOME`), or to `url` with the nkey seed file `creds`. Receipts are checked
        against `audit_keys` (default: the home's auditor key set, `keys/auditor.keys`, and
        its current key, `keys/auditor.pub`)."""
        connection, located = await open_connection(home, url, creds, user)
        return cls(connection, list(audit_keys) if audit_keys is not None else located)

    @property
    def user(self) -> str:
        """The client user this connection submits as (the first part of its request ids)."""
        return self._connection.user

    @property
    def audit_keys(self) -> list[AuditKey]:
        """The auditor verifier keys receipts are checked against: those given to `connect`,
        else the home's key set and current key as they are now (UnavailableError when a key
        file there is unreadable)."""
        if isinstance(self._audit_keys, Home):
            return list(self._audit_keys.auditor_keys())
        return list(self._audit_keys)

    async def close(self) -> None:
        await self._connection.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(
        self,
        code: str | bytes | Submission,
        /,
        *,
        wait: float | None = None,
        receipt: bool = True,
        traceparent: str | None = None,
        on_status: StatusCallback | None = None,
        timeout: float | None = None,
        **fields: Unpack[SubmissionFields],
    ) -> Result:
        """Submits and waits for the result (see `submit` and `AsyncRequest.result`): `wait`
        seconds at most (default an hour; `timeout` is its deprecated name)."""
        wait = resolve_wait(wait, timeout)
        request = await self.submit(code, receipt=receipt, traceparent=traceparent, on_status=on_status, **fields)
        try:
            return await request.result(wait)
        except asyncio.CancelledError:
            # The caller's task was cancelled: so is the request, not only the wait for it.
            await asyncio.shield(request.cancel("the caller's task was cancelled"))
            raise

    def session(
        self,
        files: Mapping[str, bytes | str | os.PathLike[str]] | None = None,
        workspace: str | None = None,
    ) -> AsyncSession:
        """Work step by step: each `await session.run(...)` is a request of its own, in a fresh
        sandbox, given `files` and every file the earlier steps left under `out/`."""
        return AsyncSession(self, files, workspace)

    async def submit(
        self,
        code: str | bytes | Submission,
        /,
        *,
        receipt: bool = True,
        traceparent: str | None = None,
        on_status: StatusCallback | None = None,
        **fields: Unpack[SubmissionFields],
    ) -> AsyncRequest:
        """Submits as this client and returns at once with the request.

        `code` is the program, or a whole `Submission`; `fields` are a Submission's other fields
        (language, origin, trust, packages, args, env, stdin, label, revises, deadline), which
        replace a given Submission's. `on_status` is called with each stage the request reaches
        (assessed, waiting for a human, approved, queued, running, ended). `traceparent`
        continues the caller's W3C trace (a new trace is started otherwise). `receipt=False`
        does not wait for the audit receipt once the result is in.
        """
        submission = Submission.of(code, fields)
        if traceparent is not None and trace_id_of(traceparent) is None:
            raise ValueError(f"traceparent {traceparent!r} is not a W3C version-00 trace context")
        wire = submission.to_wire()
        envelope = Envelope.new(request_id_for(self.user, uuid7()), SUBMISSION_PRODUCER, "submitted", wire)
        request = AsyncRequest(
            self._connection, envelope.request_id, receipt, traceparent or new_traceparent(), on_status
        )
        # Known only to the submitter: the receipt's check then covers the code that ran. The
        # wheels packages resolve to are the assessor's to learn, so a request naming packages
        # has none (as in the Rust client).
        if not submission.packages:
            request.request_digest = request_digest(wire, self.user)
        # Subscribe before submitting, so that nothing about the request can slip past. Nothing
        # can be in the streams yet for a fresh request id, so there is nothing to read back
        # until a reconnect.
        await request.subscribe()
        headers = {
            "Nats-Msg-Id": subjects.submission_msg_id(envelope.request_id, envelope.id),
            "traceparent": request.traceparent or "",
        }
        try:
            await self._connection.publish(
                subjects.submit_subject(envelope.request_id), envelope.encode(), headers, first=True
            )
        except AirlockError:
            await request.unsubscribe()
            raise
        return request

    async def attach(
        self, request_id: str, *, receipt: bool = True, on_status: StatusCallback | None = None
    ) -> AsyncRequest:
        """Follows a request submitted earlier (by this process or another): its last stage and,
        if it has ended, its result are read from the streams."""
        if not is_request_id(request_id):
            raise ValueError(f"{request_id!r} is not a request id")
        request = AsyncRequest(self._connection, request_id, receipt, None, on_status)
        await request.subscribe()
        await request.catch_up()
        return request

    async def cancel(self, request_id: str, reason: str) -> None:
        """Asks for this client's request `request_id` to be stopped (see
        `AsyncRequest.cancel`)."""
        if not is_request_id(request_id) or not request_id.startswith(f"{self.user}."):
            raise ValueError(f"{request_id!r} is not one of {self.user}'s request ids")
        await cancel_request(self._connection, request_id, reason)

    async def fetch_receipt(self, result: Result, wait: float = RECEIPT_WAIT) -> Result:
        """`result` with its audit receipt, fetched now (for a result that came back with
        `receipt_pending` because the auditor was behind). UnavailableError when it is still
        not there after `wait` seconds."""
        found = await fetch_receipt(self._connection, result.request_id, wait)
        if found is None:
            raise UnavailableError(receipt_pending_reason(result.request_id, wait), result.request_id)
        return result.with_receipt(found)

    async def verify_receipt(self, result: Result, keys: Sequence[AuditKey] | None = None) -> bool:
        """True when `result.receipt` proves that each field of the result is the logged one,
        signed by the auditor; raises ReceiptError (ResultMismatchError naming the field for an
        edited result) otherwise. No I/O: the same as the module's `verify_receipt`."""
        return verify_receipt(result, keys if keys is not None else self.audit_keys)


def verify_receipt(result: Result, keys: Sequence[AuditKey]) -> bool:
    """True when `result.receipt` proves the result against the auditor's `keys` (verifier keys
    as text, `VerifierKey`s, or a key set's `TrustedKey`s); raises ReceiptError otherwise, a
    ResultMismatchError naming the field when a field of the result is not the logged one.
    Needs no connection."""
    if not keys:
        raise ReceiptError(
            "no auditor key: pass audit_keys (`airlock audit pubkey` prints them) or connect through a home "
            "that has keys/auditor.pub (and keys/auditor.keys after a key rotation)"
        )
    _verify_receipt(result, keys)
    return True
