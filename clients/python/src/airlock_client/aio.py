"""The asyncio client: `AsyncClient` (Mai's side) and `AsyncOperator` (answering overrides)."""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import os
import weakref
from typing import Any, AsyncIterator, Mapping, Sequence

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from . import subjects
from .errors import (
    AirlockError,
    DeniedError,
    ExecutionFailedError,
    ExpiredError,
    OverrideError,
    ReceiptError,
    RefusedError,
    UnavailableError,
    ViolationError,
    WireError,
)
from .home import Home, read_seed
from .keys import KeyFormatError, SigningKey, VerifierKey, signed_payload
from .receipts import verify_receipt as _verify_receipt
from .results import OutputChunk, PendingOverride, Receipt, Result
from .wire import (
    SUBMISSION_PRODUCER,
    Envelope,
    execution_request,
    is_request_id,
    request_id_for,
    new_traceparent,
    now_ms,
    pack,
    trace_id_of,
    uuid7,
)

log = logging.getLogger("airlock_client")

#: How long `run` and `Request.result` wait for the result by default, as `airlock run --wait`.
DEFAULT_TIMEOUT = 3600.0
#: How long to wait for the audit receipt once the result is in (it normally follows within
#: one auditor batch).
DEFAULT_RECEIPT_TIMEOUT = 15.0
#: How long to keep retrying a publish through an outage before reporting the stack unavailable.
PUBLISH_PATIENCE = 30.0
#: How long one JetStream publish waits for its acknowledgement before it is retried.
PUBLISH_ACK_TIMEOUT = 5.0
#: How long `connect` waits for the first connection.
CONNECT_TIMEOUT = 10.0
#: JetStream's error codes for "the subject already holds a message" (an expected last
#: subject sequence that does not match).
WRONG_LAST_SEQUENCE_CODES = (10071, 10164)
#: Domain string of override-answer signatures.
ANSWER_DOMAIN = "airlock/override-answer/v1"


class _Connection:
    """One NATS connection as an Airlock user. It reconnects forever after the first connection
    and tells its listeners, so they can read back what was published while it was away."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.nc = NatsClient()
        self.last_error: str | None = None
        self._closing = False
        self._reconnect_listeners: weakref.WeakSet[AsyncRequest] = weakref.WeakSet()
        # The event loop keeps only weak references to tasks: these must live until done.
        self._catch_ups: set[asyncio.Task[None]] = set()

    async def open(self, url: str, seed: str, timeout: float) -> None:
        async def on_error(error: Exception) -> None:
            # Permission violations arrive here, not at the publish that caused them.
            self.last_error = str(error)
            log.warning("NATS error: %s", error)

        async def on_disconnected() -> None:
            if not self._closing:
                log.warning("disconnected from NATS; reconnecting")

        async def on_reconnected() -> None:
            log.info("reconnected to NATS")
            for listener in list(self._reconnect_listeners):
                task = asyncio.ensure_future(listener._catch_up())
                self._catch_ups.add(task)
                task.add_done_callback(self._catch_ups.discard)

        servers = [u.strip() for u in url.split(",") if u.strip()]
        try:
            await asyncio.wait_for(
                self.nc.connect(
                    servers=servers,
                    name=f"airlock-client-python-{self.user}",
                    nkeys_seed_str=seed,
                    inbox_prefix=subjects.inbox_prefix(self.user),
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=1,
                    connect_timeout=2,
                    error_cb=on_error,
                    disconnected_cb=on_disconnected,
                    reconnected_cb=on_reconnected,
                ),
                timeout,
            )
        except (asyncio.TimeoutError, OSError, nats.errors.Error) as error:
            await self._abandon()
            detail = self.last_error or str(error) or type(error).__name__
            raise UnavailableError(f"cannot reach NATS at {url} as {self.user}: {detail}") from error

    async def _abandon(self) -> None:
        try:
            await self.nc.close()
        except Exception:  # a half-open connection may fail to close; nothing is left to do
            pass

    def watch_reconnects(self, listener: AsyncRequest) -> None:
        self._reconnect_listeners.add(listener)

    def forget(self, listener: AsyncRequest) -> None:
        self._reconnect_listeners.discard(listener)

    async def direct_get(self, stream: str, subject: str) -> Msg | None:
        """The last message on `subject`, read from the stream (None when there is none).

        Mai may read terminals and receipts this way: what was published while the client was
        disconnected is not lost.
        """
        try:
            reply = await self.nc.request(f"$JS.API.DIRECT.GET.{stream}.{subject}", b"", timeout=5)
        except (asyncio.TimeoutError, nats.errors.Error) as error:
            log.info("direct get of %s failed: %s", subject, error)
            return None
        headers = reply.headers or {}
        status = headers.get("Status")
        if status == "404":
            return None
        if status:
            log.info("direct get of %s: status %s %s", subject, status, headers.get("Description", ""))
            return None
        return reply

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str], *, first: bool = False) -> None:
        """A JetStream publish, retried with the same `Nats-Msg-Id` until acknowledged.

        `first`: the message must be the first on its subject (a submission: one per request id).
        The stream refuses a second one. nats-server checks this before `Nats-Msg-Id`, so a
        retry of this very message after a lost acknowledgement is refused the same way: with a
        fresh request id, the message already there can only be an earlier attempt of this one.
        """
        if first:
            headers = {**headers, "Nats-Expected-Last-Subject-Sequence": "0"}
        js = self.nc.jetstream()
        loop = asyncio.get_running_loop()
        started = loop.time()
        backoff = 0.05
        while True:
            try:
                await js.publish(subject, payload, timeout=PUBLISH_ACK_TIMEOUT, headers=dict(headers))
                return
            except nats.js.errors.NoStreamResponseError as error:
                failure: str = f"no stream stores {subject}"
                cause: Exception = error
            except nats.js.errors.APIError as error:
                if first and error.err_code in WRONG_LAST_SEQUENCE_CODES:
                    return
                raise UnavailableError(f"the server refused the message on {subject}: {error}") from error
            except (asyncio.TimeoutError, nats.errors.Error) as error:
                failure = str(error) or type(error).__name__
                cause = error
            if self.last_error:
                if "permissions violation" in self.last_error.lower() and subject in self.last_error:
                    # Retrying cannot help: this user may not publish here.
                    raise UnavailableError(f"the server refused the message on {subject}: {self.last_error}") from cause
                failure = f"{failure} (last server error: {self.last_error})"
            if loop.time() - started >= PUBLISH_PATIENCE:
                raise UnavailableError(
                    f"publishing on {subject} was not acknowledged for {PUBLISH_PATIENCE:.0f} s: {failure}"
                ) from cause
            log.warning("publish on %s failed (%s); retrying", subject, failure)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    async def close(self) -> None:
        self._closing = True
        if not self.nc.is_closed:
            await self.nc.close()


async def _open(
    home: str | os.PathLike[str] | None,
    url: str | None,
    creds: str | os.PathLike[str] | None,
    user: str,
) -> tuple[_Connection, Home]:
    located = Home.locate(home)
    # The stack first: "no stack is running" says more than a missing seed file.
    url = url if url is not None else located.nats_url()
    seed = read_seed(creds if creds is not None else located.creds(user))
    connection = _Connection(user)
    await connection.open(url, seed, CONNECT_TIMEOUT)
    return connection, located


class AsyncClient:
    """Mai's side of Airlock over asyncio: submit code, stream its output, read its result and
    verify its audit receipt.

    `connect()` finds the running stack through `$AIRLOCK_HOME` as the `airlock` command does;
    `url` and `creds` (the path of an nkey seed file) name one explicitly.
    """

    def __init__(self, connection: _Connection, audit_keys: Sequence[str | VerifierKey]) -> None:
        self._connection = connection
        self._audit_keys = list(audit_keys)

    @classmethod
    async def connect(
        cls,
        home: str | os.PathLike[str] | None = None,
        url: str | None = None,
        creds: str | os.PathLike[str] | None = None,
        *,
        user: str = subjects.DEFAULT_USER,
        audit_keys: Sequence[str | VerifierKey] | None = None,
    ) -> AsyncClient:
        connection, located = await _open(home, url, creds, user)
        keys = list(audit_keys) if audit_keys is not None else located.auditor_keys()
        return cls(connection, keys)

    @property
    def user(self) -> str:
        return self._connection.user

    @property
    def audit_keys(self) -> list[str | VerifierKey]:
        """The auditor verifier keys receipts are checked against."""
        return list(self._audit_keys)

    async def close(self) -> None:
        await self._connection.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(
        self,
        code: str | bytes,
        language: str = "python",
        origin: str = "generated",
        trust: str = "unknown",
        packages: Sequence[str] = (),
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        label: str | None = None,
        revises: str | None = None,
        deadline: float | None = None,
        receipt: bool = True,
        traceparent: str | None = None,
    ) -> Result:
        """Submits `code` and waits for its result (see `submit` and `AsyncRequest.result`)."""
        request = await self.submit(
            code,
            language=language,
            origin=origin,
            trust=trust,
            packages=packages,
            args=args,
            env=env,
            stdin=stdin,
            label=label,
            revises=revises,
            deadline=deadline,
            receipt=receipt,
            traceparent=traceparent,
        )
        return await request.result(timeout)

    async def submit(
        self,
        code: str | bytes,
        language: str = "python",
        origin: str = "generated",
        trust: str = "unknown",
        packages: Sequence[str] = (),
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        *,
        label: str | None = None,
        revises: str | None = None,
        deadline: float | None = None,
        receipt: bool = True,
        traceparent: str | None = None,
    ) -> AsyncRequest:
        """Submits `code` as Mai and returns at once with the request.

        `origin` is generated (Mai wrote it) or external (fetched or pasted); `trust` asks for a
        quota class; `deadline` is seconds from now after which the request must not start;
        `traceparent` continues the caller's W3C trace (a new trace is started otherwise).
        `receipt=False` does not wait for the audit receipt once the result is in.
        """
        body = execution_request(
            code.encode() if isinstance(code, str) else code,
            language=language,
            origin=origin,
            trust=trust,
            args=list(args),
            env=env,
            stdin=stdin.encode() if isinstance(stdin, str) else stdin,
            packages=list(packages),
            revises=revises,
            deadline_ms=now_ms() + int(deadline * 1000) if deadline is not None else None,
            label=label,
        )
        if traceparent is not None and trace_id_of(traceparent) is None:
            raise ValueError(f"traceparent {traceparent!r} is not a W3C version-00 trace context")
        envelope = Envelope.new(request_id_for(self.user, uuid7()), SUBMISSION_PRODUCER, "submitted", body)
        request = AsyncRequest(self._connection, envelope.request_id, receipt, traceparent or new_traceparent())
        # Subscribe before submitting, so that the result cannot slip past. Nothing can be in the
        # streams yet for a fresh request id, so there is nothing to read back until a reconnect.
        await request._subscribe()
        headers = {
            "Nats-Msg-Id": subjects.submission_msg_id(envelope.request_id, envelope.id),
            "traceparent": request.traceparent or "",
        }
        try:
            await self._connection.publish(
                subjects.submit_subject(envelope.request_id), envelope.encode(), headers, first=True
            )
        except AirlockError:
            await request._unsubscribe()
            raise
        return request

    async def attach(self, request_id: str, *, receipt: bool = True) -> AsyncRequest:
        """Follows a request submitted earlier (by this process or another): its result is read
        from the stream if it has already ended."""
        if not is_request_id(request_id):
            raise ValueError(f"{request_id!r} is not a request id")
        request = AsyncRequest(self._connection, request_id, receipt, None)
        await request._subscribe()
        await request._catch_up()
        return request

    async def verify_receipt(self, result: Result, keys: Sequence[str | VerifierKey] | None = None) -> bool:
        """True when `result.receipt` proves that the result's terminal event is in the audit
        log, signed by the auditor; raises ReceiptError otherwise."""
        return verify_receipt(result, keys if keys is not None else self._audit_keys)


def verify_receipt(result: Result, keys: Sequence[str | VerifierKey]) -> bool:
    """True when `result.receipt` is valid against the auditor's verifier `keys`; raises
    ReceiptError otherwise. Needs no connection."""
    if not keys:
        raise ReceiptError(
            "no auditor key: pass audit_keys (`airlock audit pubkey` prints it) or connect through a home "
            "that has keys/auditor.pub"
        )
    _verify_receipt(result, keys)
    return True


class AsyncRequest:
    """A submitted request: its output as it happens, then its result.

    The terminal event and the receipt are read from their subjects and, after subscribing and
    after every reconnect, from the streams (JetStream direct get), so a result published while
    the client was disconnected is not missed. Output chunks published while disconnected are
    not replayed; the result holds the whole output.
    """

    def __init__(self, connection: _Connection, request_id: str, want_receipt: bool, traceparent: str | None) -> None:
        self.request_id = request_id
        #: The W3C trace context the submission carried (None for an attached request).
        self.traceparent = traceparent
        self._connection = connection
        self._want_receipt = want_receipt
        loop = asyncio.get_running_loop()
        self._terminal: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._receipt: asyncio.Future[Receipt] = loop.create_future()
        self._chunks: asyncio.Queue[OutputChunk] = asyncio.Queue()
        self._seen_chunks: set[int] = set()
        self._subscriptions: list[Subscription] = []
        self._output_subscription: Subscription | None = None

    async def _subscribe(self) -> None:
        nc = self._connection.nc
        rid = self.request_id
        self._output_subscription = await nc.subscribe(subjects.output_subject(rid), cb=self._on_output)
        self._subscriptions = [
            self._output_subscription,
            await nc.subscribe(subjects.terminal_subject(rid), cb=self._on_terminal),
            await nc.subscribe(subjects.receipt_subject(rid), cb=self._on_receipt),
        ]
        # The subscriptions must be in place on the server before anything is submitted.
        await nc.flush()
        self._connection.watch_reconnects(self)

    async def _unsubscribe(self) -> None:
        for subscription in self._subscriptions:
            try:
                await subscription.unsubscribe()
            except nats.errors.Error:  # already gone with a closed connection
                pass
        self._subscriptions = []

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

    async def _catch_up(self) -> None:
        """Reads the terminal event and the receipt from the streams, in case they were
        published while no subscription could see them."""
        if not self._terminal.done():
            subject = subjects.terminal_subject(self.request_id)
            msg = await self._connection.direct_get(subjects.EVENTS_STREAM, subject)
            if msg is not None:
                log.info("the terminal event of %s was read back from the stream", self.request_id)
                self._accept_terminal(subject, msg.data)
        if self._want_receipt and not self._receipt.done():
            msg = await self._connection.direct_get(
                subjects.AUDIT_STREAM, subjects.receipt_subject(self.request_id)
            )
            if msg is not None:
                self._accept_receipt(msg.data)

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

    async def result(self, timeout: float = DEFAULT_TIMEOUT) -> Result:
        """Waits for the request to end and returns its result, with the audit receipt.

        A program that ran and exited (with any exit code) is a Result. A request that was
        denied, expired, refused, stopped for a violation or could not be run raises the
        matching RequestError, which carries the Result. UnavailableError when nothing came
        within `timeout` seconds (the request may still finish: `attach` it again).
        """
        try:
            terminal = await asyncio.wait_for(asyncio.shield(self._terminal), timeout)
        except asyncio.TimeoutError:
            await self._catch_up()
            if not self._terminal.done():
                raise UnavailableError(
                    f"no result for {self.request_id} after {timeout:g} s (it may still finish)", self.request_id
                ) from None
            terminal = self._terminal.result()
        receipt = await self._await_receipt() if self._want_receipt else None
        await self._unsubscribe()
        self._connection.forget(self)
        result = Result.from_terminal(self.request_id, terminal, receipt, self.traceparent)
        _raise_for_outcome(result)
        return result

    async def _await_receipt(self) -> Receipt | None:
        try:
            return await asyncio.wait_for(asyncio.shield(self._receipt), DEFAULT_RECEIPT_TIMEOUT)
        except asyncio.TimeoutError:
            await self._catch_up()
            return self._receipt.result() if self._receipt.done() else None


def _raise_for_outcome(result: Result) -> None:
    """Raises the typed error for every end but "the program ran and exited"."""
    reason = result.reason or ""
    if result.outcome == "finished":
        return
    if result.outcome == "denied" and (result.approver or {}).get("by") == "deadline":
        # The gate denies a request nobody answered in time: to the caller it expired.
        raise ExpiredError(result, reason or "no answer before the deadline")
    if result.outcome == "denied":
        raise DeniedError(result, reason or "denied")
    if result.outcome == "expired":
        raise ExpiredError(result, reason or "expired")
    if result.violation is not None:
        v = result.violation
        raise ViolationError(result, f"{v.kind} limit exceeded: {v.detail}", v)
    if result.refusal is not None or (result.outcome == "failed" and result.decision is None):
        # A service refused the request itself (nothing was decided, or the terminal event names
        # the refusal). Reasons the client does not know are refusals too.
        raise RefusedError(result, reason or f"refused ({result.refusal or 'no reason given'})")
    if result.outcome == "failed":
        raise ExecutionFailedError(result, reason or "Airlock could not run the code")
    raise RefusedError(result, f"the request ended with an unknown outcome {result.outcome!r}: {reason}")


class AsyncOperator:
    """The operator's side: list the requests waiting for a human, approve or deny them with
    answers signed by the approver key (`$AIRLOCK_HOME/keys/approver.key`)."""

    def __init__(self, connection: _Connection, approver: SigningKey | None) -> None:
        self._connection = connection
        self._approver = approver

    @classmethod
    async def connect(
        cls,
        home: str | os.PathLike[str] | None = None,
        url: str | None = None,
        creds: str | os.PathLike[str] | None = None,
        *,
        approver_key: str | os.PathLike[str] | None = None,
    ) -> AsyncOperator:
        connection, located = await _open(home, url, creds, "operator")
        path = approver_key if approver_key is not None else located.private_key("approver")
        try:
            with open(path) as file:
                approver: SigningKey | None = SigningKey.parse(file.read())
        except FileNotFoundError:
            approver = None
        except (OSError, KeyFormatError) as error:
            await connection.close()
            raise AirlockError(f"the approver key {path}: {error}") from error
        return cls(connection, approver)

    async def close(self) -> None:
        await self._connection.close()

    async def __aenter__(self) -> AsyncOperator:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def list_overrides(self) -> list[PendingOverride]:
        """Requests waiting for a human, as the override-gate reports them."""
        try:
            reply = await self._connection.nc.request(subjects.GATE_PENDING_ENDPOINT, b"", timeout=10)
        except (asyncio.TimeoutError, nats.errors.Error) as error:
            raise UnavailableError(f"the override-gate did not answer: {error}") from error
        try:
            pending = json.loads(reply.data)
            if not isinstance(pending, list):
                raise ValueError("not a list")
            return [PendingOverride.from_json(p) for p in pending]
        except (ValueError, WireError) as error:
            raise UnavailableError(f"unreadable reply from the override-gate: {reply.data[:200]!r}") from error

    async def approve(self, request_id: str, reason: str, who: str | None = None) -> None:
        """Lets a waiting request run (with the gate's override quota)."""
        await self.answer(request_id, True, reason, who)

    async def deny(self, request_id: str, reason: str, who: str | None = None) -> None:
        """Refuses a waiting request; it ends as denied."""
        await self.answer(request_id, False, reason, who)

    async def answer(self, request_id: str, approve: bool, reason: str, who: str | None = None) -> None:
        """Sends a signed answer and waits until the gate decides on it.

        Raises OverrideError when the request is not waiting or the gate refuses the answer.
        """
        if not reason.strip():
            raise ValueError("an override answer needs a reason: it is recorded in the decision and the audit log")
        if self._approver is None:
            raise AirlockError("no approver key: pass approver_key or connect through a home that has one")
        pending = {p.request_id: p for p in await self.list_overrides()}
        asked = pending.get(request_id)
        if asked is None:
            raise OverrideError(f"{request_id} is not waiting for a decision")
        answer = {
            "request_id": request_id,
            # An answer is valid only for exactly the execution the human was shown.
            "execution_digest": asked.execution_digest,
            "approve": approve,
            "reason": reason,
            "who": who or _default_who(),
            "answered_at_ms": now_ms(),
        }
        signed = signed_payload(pack(answer), ANSWER_DOMAIN, self._approver)
        envelope = Envelope.new(request_id, "operator", "override_answered", {"signed": signed})
        nc = self._connection.nc
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[str | None] = loop.create_future()

        async def on_decided(msg: Msg) -> None:
            if not settled.done():
                settled.set_result(None)

        async def on_refused(msg: Msg) -> None:
            try:
                detail = Envelope.decode_on(msg.subject, msg.data).data.get("detail", "refused")
            except (WireError, AttributeError):
                detail = "refused"
            if not settled.done():
                settled.set_result(str(detail))

        watches = [
            await nc.subscribe(subjects.event_subject("decided", request_id), cb=on_decided),
            await nc.subscribe(subjects.event_subject("refused", request_id), cb=on_refused),
        ]
        try:
            await nc.flush()
            await self._connection.publish(
                subjects.event_subject("override_answered", request_id),
                envelope.encode(),
                {
                    "Nats-Msg-Id": subjects.answer_msg_id(envelope.id),
                    "traceparent": new_traceparent(),
                },
            )
            try:
                refusal = await asyncio.wait_for(settled, 15)
            except asyncio.TimeoutError:
                raise UnavailableError(
                    f"{request_id}: answer sent, but the gate has not confirmed it", request_id
                ) from None
            if refusal is not None:
                raise OverrideError(f"{request_id}: the gate refused the answer: {refusal}")
        finally:
            for watch in watches:
                await watch.unsubscribe()


def _default_who() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "operator"
