"""A submitted request, followed over asyncio: its status as it moves, its output as it
happens, then its one result with the audit receipt."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import warnings
from typing import Any, AsyncIterator

import nats.errors
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from . import subjects
from .connection import Connection
from .errors import (
    DeniedError,
    ExecutionFailedError,
    ExpiredError,
    RefusedError,
    RequestCancelledError,
    UnavailableError,
    ViolationError,
    WireError,
)
from .results import OutputChunk, Receipt, Result
from .status import Status, StatusCallback
from .wire import SUBMISSION_PRODUCER, Envelope

log = logging.getLogger("airlock_client")

#: How long `run` and `Request.result` wait for the result by default, as `airlock run --wait`
#: (a human may have to answer first).
DEFAULT_WAIT = 3600.0
#: How long to wait for the audit receipt once the result is in (it normally follows within
#: one auditor batch, a few hundred milliseconds).
RECEIPT_WAIT = 15.0


def resolve_wait(wait: float | None, timeout: float | None, default: float = DEFAULT_WAIT, stacklevel: int = 3) -> float:
    """`wait`, or the deprecated `timeout` it replaced (with a DeprecationWarning)."""
    if timeout is not None:
        warnings.warn(
            "timeout= is deprecated: it is how long to wait for the result, now called wait= "
            "(the request itself is bounded by its quota and deadline=)",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        if wait is not None and wait != timeout:
            raise TypeError("pass wait= (timeout= is its deprecated name), not both")
        return timeout
    return default if wait is None else wait


def receipt_pending_reason(request_id: str, waited: float) -> str:
    """Why a receipt is not there after `waited` seconds, and how to get it later."""
    return (
        f"no audit receipt for {request_id} after {waited:g} s: the auditor has not yet committed the "
        "request's terminal entry to a signed checkpoint (it is behind, restarting or stopped; `airlock status` "
        "shows it). The result itself is complete. Fetch the receipt later with client.fetch_receipt(result), "
        f"or see the entries with `airlock audit replay --request {request_id}`"
    )


class AsyncRequest:
    """A submitted request: its status and output as they happen, then its result.

    The terminal event and the receipt are read from their subjects and, after subscribing and
    after every reconnect, from the streams (JetStream direct get), so a result published while
    the client was disconnected is not missed. Output chunks and stages published while
    disconnected are not replayed; the result holds the whole output.
    """

    def __init__(
        self,
        connection: Connection,
        request_id: str,
        want_receipt: bool,
        traceparent: str | None,
        on_status: StatusCallback | None = None,
    ) -> None:
        self.request_id = request_id
        #: The W3C trace context the submission carried (None for an attached request).
        self.traceparent = traceparent
        #: The request digest of what was submitted (None for an attached request, or one
        #: naming packages: the wheels they resolve to are the assessor's to learn).
        self.request_digest: str | None = None
        self._connection = connection
        self._want_receipt = want_receipt
        self._on_status = on_status
        loop = asyncio.get_running_loop()
        self._terminal: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._receipt: asyncio.Future[Receipt] = loop.create_future()
        self._chunks: asyncio.Queue[OutputChunk] = asyncio.Queue()
        self._seen_chunks: set[int] = set()
        self._subscriptions: list[Subscription] = []
        self._output_subscription: Subscription | None = None
        self._statuses: list[Status] = [Status.now("submitted")]
        self._status_changed = asyncio.Event()

    async def subscribe(self) -> None:
        """Subscribes to everything about this request; the subscriptions are on the server
        when this returns, so nothing submitted afterwards can slip past."""
        nc = self._connection.nc
        rid = self.request_id
        self._output_subscription = await nc.subscribe(subjects.output_subject(rid), cb=self._on_output)
        self._subscriptions = [
            self._output_subscription,
            await nc.subscribe(subjects.terminal_subject(rid), cb=self._on_terminal),
            await nc.subscribe(subjects.receipt_subject(rid), cb=self._on_receipt),
            await nc.subscribe(subjects.progress_subject(rid), cb=self._on_progress),
        ]
        await nc.flush()
        self._connection.watch_reconnects(self)

    async def unsubscribe(self) -> None:
        for subscription in self._subscriptions:
            try:
                await subscription.unsubscribe()
            except nats.errors.Error:  # already gone with a closed connection
                pass
        self._subscriptions = []
        self._connection.forget(self)

    # -- what arrives -------------------------------------------------------------------------

    async def _on_output(self, msg: Msg) -> None:
        try:
            envelope = Envelope.decode_on(msg.subject, msg.data)
            chunk = OutputChunk.from_wire(envelope.data)
        except WireError as error:
            log.info("ignoring an unreadable output chunk on %s: %s", msg.subject, error)
            return
        # A publish retried after a lost acknowledgement reaches subscribers twice.
        if chunk.seq not in self._seen_chunks:
            self._seen_chunks.add(chunk.seq)
            self._chunks.put_nowait(chunk)

    async def _on_progress(self, msg: Msg) -> None:
        self._accept_progress(msg.subject, msg.data)

    def _accept_progress(self, subject: str, data: bytes) -> None:
        try:
            envelope = Envelope.decode_on(subject, data)
            status = Status.from_wire(envelope.data, envelope.time_ms)
        except WireError as error:
            log.info("ignoring an unreadable progress event on %s: %s", subject, error)
            return
        if self._terminal.done() or status in self._statuses:
            return  # late, or a retried publish seen twice
        self._record(status)

    def _record(self, status: Status) -> None:
        self._statuses.append(status)
        self._status_changed.set()
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception:  # the caller's callback must not stop the request being followed
                log.exception("the on_status callback of %s raised", self.request_id)

    async def _on_terminal(self, msg: Msg) -> None:
        self._accept_terminal(msg.subject, msg.data)

    def _accept_terminal(self, subject: str, data: bytes) -> None:
        try:
            envelope = Envelope.decode_on(subject, data)
        except WireError as error:
            log.info("ignoring an unreadable terminal event on %s: %s", subject, error)
            return
        if envelope.kind == "terminal" and isinstance(envelope.data, dict) and not self._terminal.done():
            self._terminal.set_result(envelope.data)
            self._record(Status.now("ended"))

    async def _on_receipt(self, msg: Msg) -> None:
        self._accept_receipt(msg.data)

    def _accept_receipt(self, data: bytes) -> None:
        try:
            receipt = Receipt.decode(data)
        except WireError as error:
            log.info("ignoring an unreadable receipt for %s: %s", self.request_id, error)
            return
        if receipt.request_id == self.request_id and not self._receipt.done():
            self._receipt.set_result(receipt)

    async def catch_up(self) -> None:
        """Reads the terminal event, the last stage and the receipt from the streams, in case
        they were published while no subscription could see them."""
        if not self._terminal.done():
            subject = subjects.progress_subject(self.request_id)
            msg = await self._connection.direct_get(subjects.EVENTS_STREAM, subject)
            if msg is not None:
                self._accept_progress(subject, msg.data)
            subject = subjects.terminal_subject(self.request_id)
            msg = await self._connection.direct_get(subjects.EVENTS_STREAM, subject)
            if msg is not None:
                log.info("the terminal event of %s was read back from the stream", self.request_id)
                self._accept_terminal(subject, msg.data)
        if self._want_receipt and not self._receipt.done():
            msg = await self._connection.direct_get(subjects.AUDIT_STREAM, subjects.receipt_subject(self.request_id))
            if msg is not None:
                self._accept_receipt(msg.data)

    # -- what the caller asks ----------------------------------------------------------------

    def status(self) -> Status:
        """Where the request is now (the last stage seen)."""
        return self._statuses[-1]

    @property
    def statuses(self) -> list[Status]:
        """Every stage seen so far, in order, from `submitted`."""
        return list(self._statuses)

    async def status_changes(self) -> AsyncIterator[Status]:
        """Each stage as it is reached, from the current one; ends after `ended`."""
        seen = 0
        while True:
            while seen < len(self._statuses):
                status = self._statuses[seen]
                seen += 1
                yield status
                if status.stage == "ended":
                    return
            self._status_changed.clear()
            await self._status_changed.wait()

    async def output(self) -> AsyncIterator[OutputChunk]:
        """The program's output chunks (stdout and stderr, in order) as they are produced; ends
        when the request ends."""
        while True:
            if not self._chunks.empty():
                yield self._chunks.get_nowait()
                continue
            if self._terminal.done():
                # Chunks that arrived before the terminal event may still wait in the output
                # subscription's queue: its handler runs as a task of its own.
                if self._output_subscription is not None and self._output_subscription.pending_msgs > 0:
                    await asyncio.sleep(0)
                    continue
                return
            get = asyncio.ensure_future(self._chunks.get())
            waiters: set[asyncio.Future[Any]] = {get, self._terminal}
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if get in done:
                yield get.result()
            else:
                get.cancel()

    async def cancel(self, reason: str) -> None:
        """Asks for the request to be stopped: withdrawn while it is assessed or waits for a
        human, killed while it waits for its turn or runs. It then ends "cancelled" (`result`
        raises RequestCancelledError with what it wrote until then); one that has already ended
        stays as it ended. Returns once the cancellation is stored (and so audited)."""
        await cancel_request(self._connection, self.request_id, reason)

    async def result(self, wait: float | None = None, *, timeout: float | None = None) -> Result:
        """Waits for the request to end and returns its result, with the audit receipt.

        A program that ran and exited (with any exit code) is a Result. A request that was
        denied, expired, refused, stopped for a violation or could not be run raises the
        matching RequestError, which carries the Result. UnavailableError when nothing came
        within `wait` seconds (default an hour; the request may still finish: `attach` it
        again). `timeout` is the deprecated name of `wait`.
        """
        wait = resolve_wait(wait, timeout)
        try:
            terminal = await asyncio.wait_for(asyncio.shield(self._terminal), wait)
        except asyncio.TimeoutError:
            await self.catch_up()
            if not self._terminal.done():
                raise UnavailableError(
                    f"no result for {self.request_id} after {wait:g} s; it is {self.status().describe()} "
                    "(it may still finish: client.attach(request_id) follows it again)",
                    self.request_id,
                ) from None
            terminal = self._terminal.result()
        receipt = await self._await_receipt() if self._want_receipt else None
        await self.unsubscribe()
        result = Result.from_terminal(
            self.request_id,
            terminal,
            receipt,
            self.traceparent,
            receipt_pending=receipt_pending_reason(self.request_id, RECEIPT_WAIT) if self._want_receipt else None,
            request_digest=self.request_digest,
        )
        observed = await self._observed()
        if observed is not None:
            result = dataclasses.replace(result, observed=observed)
        raise_for_outcome(result)
        return result

    async def _observed(self) -> dict[str, Any] | None:
        """The kernel's record of the run, read from the stream (published before the terminal
        event); None when the code never ran or the record cannot be read."""
        subject = subjects.observed_subject(self.request_id)
        msg = await self._connection.direct_get(subjects.EVENTS_STREAM, subject)
        if msg is None:
            return None
        try:
            envelope = Envelope.decode_on(subject, msg.data)
        except WireError as error:
            log.info("ignoring an unreadable observed event on %s: %s", subject, error)
            return None
        return envelope.data if envelope.kind == "observed" and isinstance(envelope.data, dict) else None

    async def _await_receipt(self) -> Receipt | None:
        try:
            return await asyncio.wait_for(asyncio.shield(self._receipt), RECEIPT_WAIT)
        except asyncio.TimeoutError:
            await self.catch_up()
            if self._receipt.done():
                return self._receipt.result()
            log.warning("%s", receipt_pending_reason(self.request_id, RECEIPT_WAIT))
            return None


async def cancel_request(connection: Connection, request_id: str, reason: str) -> None:
    """Publishes a `cancel_requested` event for `request_id` (this client's own)."""
    if not reason.strip():
        raise ValueError("a cancellation needs a reason: it is recorded in the request's end and the audit log")
    if len(reason.encode()) > subjects.MAX_CANCEL_REASON:
        raise ValueError(f"the reason is {len(reason.encode())} bytes; at most {subjects.MAX_CANCEL_REASON}")
    envelope = Envelope.new(request_id, SUBMISSION_PRODUCER, "cancel_requested", {"reason": reason})
    await connection.publish(
        subjects.cancel_subject(request_id), envelope.encode(), {"Nats-Msg-Id": envelope.id}
    )


async def fetch_receipt(connection: Connection, request_id: str, wait: float) -> Receipt | None:
    """The request's receipt from the audit stream, or from its subject within `wait` seconds."""
    loop = asyncio.get_running_loop()
    arrived: asyncio.Future[Receipt] = loop.create_future()

    async def on_receipt(msg: Msg) -> None:
        try:
            receipt = Receipt.decode(msg.data)
        except WireError:
            return
        if receipt.request_id == request_id and not arrived.done():
            arrived.set_result(receipt)

    subscription = await connection.nc.subscribe(subjects.receipt_subject(request_id), cb=on_receipt)
    try:
        await connection.nc.flush()
        stored = await connection.direct_get(subjects.AUDIT_STREAM, subjects.receipt_subject(request_id))
        if stored is not None:
            receipt = Receipt.decode(stored.data)
            if receipt.request_id == request_id:
                return receipt
        try:
            return await asyncio.wait_for(arrived, wait)
        except asyncio.TimeoutError:
            return None
    finally:
        try:
            await subscription.unsubscribe()
        except nats.errors.Error:
            pass


def raise_for_outcome(result: Result) -> None:
    """Raises the typed error for every end but "the program ran and exited"."""
    reason = result.reason or ""
    if result.outcome == "finished":
        return
    if result.outcome == "denied" and result.approver is not None and result.approver.by == "deadline":
        # The gate denies a request nobody answered in time: to the caller it expired.
        raise ExpiredError(result, reason or "no answer before the deadline")
    if result.outcome == "denied":
        raise DeniedError(result, reason or "denied")
    if result.outcome == "expired":
        raise ExpiredError(result, reason or "expired")
    if result.outcome == "cancelled":
        raise RequestCancelledError(result, reason or "cancelled by its client")
    if result.violation is not None:
        v = result.violation
        raise ViolationError(result, f"{v.kind} limit exceeded: {v.detail}", v)
    if result.refusal is not None or (result.outcome == "failed" and result.decision is None):
        # A service refused the request itself (nothing was decided, or the terminal event names
        # the refusal). Reasons the client does not know are refusals too.
        refused = RefusedError(result, reason or f"refused ({result.refusal or 'no reason given'})")
        if refused.hint is not None:
            refused = RefusedError(result, f"{refused.reason} (retryable: {refused.hint})")
        raise refused
    raise ExecutionFailedError(result, reason or "Airlock could not run the code")
