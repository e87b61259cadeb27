"""One NATS connection as an Airlock user: connecting through `$AIRLOCK_HOME`, publishing with
retries until acknowledged, reading the streams back, and telling a permission the server
refused from a stack that is slow or away."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import weakref
from typing import Any, Awaitable, Protocol, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from . import subjects
from .errors import PermissionDeniedError, UnavailableError
from .home import Home, read_seed

log = logging.getLogger("airlock_client")

#: How long to keep retrying a publish through an outage before reporting the stack unavailable.
PUBLISH_PATIENCE = 30.0
#: How long one JetStream publish waits for its acknowledgement before it is retried.
PUBLISH_ACK_TIMEOUT = 5.0
#: How long `connect` waits for the first connection.
CONNECT_TIMEOUT = 10.0
#: JetStream's error codes for "the subject already holds a message" (an expected last
#: subject sequence that does not match).
WRONG_LAST_SEQUENCE_CODES = (10071, 10164)
#: How the server names the subject it refused: `Permissions Violation for Publish to "x"`.
_VIOLATION = re.compile(r'permissions violation for (publish|subscription) to "?([^"\s\']+)', re.IGNORECASE)

T = TypeVar("T")


class ReconnectListener(Protocol):
    """Something that reads back, after a reconnect, what it may have missed while away."""

    async def catch_up(self) -> None: ...


class Connection:
    """One NATS connection as an Airlock user. It reconnects forever after the first connection
    and tells its listeners, so they can read back what was published while it was away."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.nc = NatsClient()
        self.last_error: str | None = None
        self._closing = False
        self._reconnect_listeners: weakref.WeakSet[Any] = weakref.WeakSet()
        # The event loop keeps only weak references to tasks: these must live until done.
        self._tasks: set[asyncio.Task[None]] = set()
        # Calls waiting on a subject, failed at once when the server refuses it.
        self._refusal_watchers: dict[str, list[asyncio.Future[str]]] = {}

    async def open(self, url: str, seed: str, timeout: float) -> None:
        async def on_error(error: Exception) -> None:
            # Permission violations arrive here, not at the call that caused them.
            self.last_error = str(error)
            self._notify_refusal(str(error))
            log.warning("NATS error: %s", error)

        async def on_disconnected() -> None:
            if not self._closing:
                log.warning("disconnected from NATS; reconnecting")

        async def on_reconnected() -> None:
            log.info("reconnected to NATS")
            for listener in list(self._reconnect_listeners):
                self.spawn(listener.catch_up())

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
            if isinstance(error, nats.errors.AuthorizationError) or "authorization" in detail.lower():
                raise PermissionDeniedError(
                    f"NATS at {url} does not accept these credentials for user {self.user}: {detail}"
                ) from error
            raise UnavailableError(f"cannot reach NATS at {url} as {self.user}: {detail}") from error

    def spawn(self, coroutine: Awaitable[None]) -> None:
        """Runs `coroutine` in the background, kept alive until it is done."""
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _abandon(self) -> None:
        try:
            await self.nc.close()
        except Exception:  # a half-open connection may fail to close; nothing is left to do
            pass

    def watch_reconnects(self, listener: ReconnectListener) -> None:
        self._reconnect_listeners.add(listener)

    def forget(self, listener: ReconnectListener) -> None:
        self._reconnect_listeners.discard(listener)

    def _notify_refusal(self, error: str) -> None:
        found = _VIOLATION.search(error)
        if found is None:
            return
        refused = found.group(2)
        for subject, watchers in list(self._refusal_watchers.items()):
            if _concerns(refused, subject):
                for watcher in watchers:
                    if not watcher.done():
                        watcher.set_result(error)

    async def refused_or(self, subject: str, call: Awaitable[T]) -> T:
        """Awaits `call`, unless the server refuses this user `subject` first: then
        PermissionDeniedError, at once rather than after a timeout."""
        watcher: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._refusal_watchers.setdefault(subject, []).append(watcher)
        work = asyncio.ensure_future(call)
        racing: set[asyncio.Future[Any]] = {work, watcher}
        try:
            await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
            if watcher.done() and not work.done():
                work.cancel()
                raise PermissionDeniedError(self._refused_message(subject, watcher.result()))
            return await work
        finally:
            watchers = self._refusal_watchers.get(subject, [])
            if watcher in watchers:
                watchers.remove(watcher)
            if not watchers:
                self._refusal_watchers.pop(subject, None)
            if not work.done():
                work.cancel()

    def _refused_message(self, subject: str, error: str) -> str:
        return (
            f"the server refused user {self.user} {subject}: {error}. Each NATS user may do only what its "
            f"role allows (docs/clients.md); check that the credentials are the {self.user} user's"
        )

    async def request(self, subject: str, payload: bytes, timeout: float) -> Msg:
        """A core NATS request; PermissionDeniedError when the server refuses the subject,
        UnavailableError when nobody answers."""
        try:
            return await self.refused_or(subject, self.nc.request(subject, payload, timeout=timeout))
        except (asyncio.TimeoutError, nats.errors.Error) as error:
            raise UnavailableError(f"nobody answered on {subject} within {timeout:g} s: {error}") from error

    async def direct_get(self, stream: str, subject: str) -> Msg | None:
        """The last message on `subject`, read from the stream (None when there is none).

        Clients may read terminals and receipts this way: what was published while the client
        was disconnected is not lost.
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
                await self.refused_or(
                    subject, js.publish(subject, payload, timeout=PUBLISH_ACK_TIMEOUT, headers=dict(headers))
                )
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
                if _VIOLATION.search(self.last_error) and subject in self.last_error:
                    # Retrying cannot help: this user may not publish here.
                    raise PermissionDeniedError(self._refused_message(subject, self.last_error)) from cause
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


def _concerns(refused: str, subject: str) -> bool:
    """Whether the server refusing `refused` fails a call on `subject`: the subject itself, or
    the inbox its reply would come to (credentials of another user than the one connected as
    cannot read that user's inbox)."""
    return refused == subject or refused.startswith("_INBOX")


async def open_connection(
    home: str | os.PathLike[str] | None,
    url: str | None,
    creds: str | os.PathLike[str] | None,
    user: str,
) -> tuple[Connection, Home]:
    """Connects as `user` to the stack of `home` (default `$AIRLOCK_HOME`), or to `url` with the
    nkey seed in the file `creds`."""
    located = Home.locate(home)
    # The stack first: "no stack is running" says more than a missing seed file.
    url = url if url is not None else located.nats_url()
    seed = read_seed(creds if creds is not None else located.creds(user))
    connection = Connection(user)
    await connection.open(url, seed, CONNECT_TIMEOUT)
    return connection, located
