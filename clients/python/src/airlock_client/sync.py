"""The blocking client: the asyncio client run on an event loop in a thread of its own, so it
works from plain scripts and from inside programs that already run a loop."""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import Future
from typing import Any, AsyncIterator, Coroutine, Iterator, Mapping, Sequence, TypeVar, Unpack

from . import subjects
from .aio import AsyncClient, verify_receipt
from .receipts import AuditKey
from .operator import AsyncOperator
from .request import RECEIPT_WAIT, AsyncRequest, resolve_wait
from .results import OutputChunk, PendingOverride, Result
from .session import Session
from .status import Status, StatusCallback
from .submission import Submission, SubmissionFields

T = TypeVar("T")


class _LoopThread:
    """An event loop running in a daemon thread; coroutines are handed to it and awaited."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="airlock-client", daemon=True)
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        if not self.loop.is_running():
            self.loop.close()


class Client:
    """Mai's side of Airlock, blocking: `run` code and get its `Result`, or `submit` it and
    follow its status and output as they happen.

        with Client.connect() as client:
            result = client.run("print('hello')")
            client.verify_receipt(result)
    """

    def __init__(self, runner: _LoopThread, client: AsyncClient) -> None:
        self._runner = runner
        self._client = client

    @classmethod
    def connect(
        cls,
        home: str | os.PathLike[str] | None = None,
        url: str | None = None,
        creds: str | os.PathLike[str] | None = None,
        *,
        user: str = subjects.DEFAULT_USER,
        audit_keys: Sequence[AuditKey] | None = None,
    ) -> Client:
        """Connects as client `user` (default `mai`) to the stack of `home` (default
        `$AIRLOCK_HOME`, as the `airlock` command finds it), or to `url` with the nkey seed file
        `creds`. Receipts are checked against `audit_keys` (default: the home's auditor key set,
        `keys/auditor.keys`, and current key, `keys/auditor.pub`, read at each check, so that
        receipts signed before a key rotation keep verifying). UnavailableError when no stack answers; PermissionDeniedError when the server
        refuses the credentials."""
        runner = _LoopThread()
        try:
            client = runner.call(AsyncClient.connect(home, url, creds, user=user, audit_keys=audit_keys))
        except BaseException:
            runner.stop()
            raise
        return cls(runner, client)

    def close(self) -> None:
        """Closes the connection; requests still running go on without this client."""
        try:
            self._runner.call(self._client.close())
        finally:
            self._runner.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def user(self) -> str:
        """The client user this connection submits as."""
        return self._client.user

    def run(
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
        """Submits `code` (or a `Submission`) and waits for its result and audit receipt.

        `fields` are the Submission's fields (language, origin, trust, packages, args, env,
        stdin, label, revises, deadline). Waits at most `wait` seconds (default an hour: a human
        may have to answer first; `timeout` is its deprecated name). `on_status` is called, on
        the client's own thread, with each stage the request reaches.

        Returns the Result when the program ran and exited (any exit code). Raises DeniedError,
        ExpiredError, RefusedError (`retryable` says whether to try again), ViolationError or
        ExecutionFailedError, each carrying the Result; UnavailableError when the stack cannot
        be reached or nothing came within `wait`; PermissionDeniedError when this user may not
        submit.
        """
        wait = resolve_wait(wait, timeout)
        return self._runner.call(
            self._client.run(code, wait=wait, receipt=receipt, traceparent=traceparent, on_status=on_status, **fields)
        )

    def session(
        self,
        files: Mapping[str, bytes | str | os.PathLike[str]] | None = None,
        workspace: str | None = None,
    ) -> Session:
        """Work step by step: each `session.run` is a request of its own, in a fresh sandbox,
        given `files` and every file the earlier steps left under `out/` (see `Session`)."""
        return Session(self, files, workspace)

    def submit(
        self,
        code: str | bytes | Submission,
        /,
        *,
        receipt: bool = True,
        traceparent: str | None = None,
        on_status: StatusCallback | None = None,
        **fields: Unpack[SubmissionFields],
    ) -> Request:
        """Submits `code` (or a `Submission`) and returns at once with the `Request`, to follow
        its status and output and then wait for its result. Arguments as for `run`."""
        request = self._runner.call(
            self._client.submit(code, receipt=receipt, traceparent=traceparent, on_status=on_status, **fields)
        )
        return Request(self._runner, request)

    def attach(self, request_id: str, *, receipt: bool = True, on_status: StatusCallback | None = None) -> Request:
        """Follows a request submitted earlier, by this process or another (its result is read
        back from the streams if it has already ended)."""
        return Request(self._runner, self._runner.call(self._client.attach(request_id, receipt=receipt, on_status=on_status)))

    def cancel(self, request_id: str, reason: str) -> None:
        """Asks for this client's request `request_id` to be stopped (see `Request.cancel`)."""
        self._runner.call(self._client.cancel(request_id, reason))

    def fetch_receipt(self, result: Result, wait: float = RECEIPT_WAIT) -> Result:
        """`result` with its audit receipt, for a result that came back without one
        (`result.receipt_pending` says why). UnavailableError when it is still not there after
        `wait` seconds."""
        return self._runner.call(self._client.fetch_receipt(result, wait))

    @property
    def audit_keys(self) -> list[AuditKey]:
        """The auditor verifier keys receipts are checked against."""
        return self._client.audit_keys

    def verify_receipt(self, result: Result, keys: Sequence[AuditKey] | None = None) -> bool:
        """True when the receipt proves that each field of the result is the logged one, signed
        by the auditor; raises ReceiptError otherwise (ResultMismatchError naming the field for
        an edited result). Offline: no network."""
        return verify_receipt(result, keys if keys is not None else self._client.audit_keys)


class Request:
    """A submitted request, blocking: `status()` says where it is, `output()` yields chunks as
    they are produced, `result()` waits for the end."""

    def __init__(self, runner: _LoopThread, request: AsyncRequest) -> None:
        self._runner = runner
        self._request = request

    @property
    def request_id(self) -> str:
        """`<client>.<local>`: how the audit log, `airlock` commands and `attach` name it."""
        return self._request.request_id

    @property
    def traceparent(self) -> str | None:
        """The W3C trace context the submission carried (None for an attached request)."""
        return self._request.traceparent

    def status(self) -> Status:
        """Where the request is now: the last stage seen (`submitted` before any)."""
        return self._request.status()

    @property
    def statuses(self) -> list[Status]:
        """Every stage seen so far, in order."""
        return self._request.statuses

    def output(self) -> Iterator[OutputChunk]:
        """The program's output chunks (stdout and stderr, in order) as they are produced; ends
        when the request ends."""
        chunks: AsyncIterator[OutputChunk] = self._request.output()
        while True:
            try:
                yield self._runner.call(_next(chunks))
            except StopAsyncIteration:
                return

    def cancel(self, reason: str) -> None:
        """Asks for the request to be stopped (see `AsyncRequest.cancel`); `result()` then
        raises RequestCancelledError, unless it had already ended."""
        self._runner.call(self._request.cancel(reason))

    def result(self, wait: float | None = None, *, timeout: float | None = None) -> Result:
        """Waits (at most `wait` seconds, default an hour) for the end and returns the Result,
        or raises the typed error of how it ended (see `Client.run`). `timeout` is the
        deprecated name of `wait`."""
        wait = resolve_wait(wait, timeout)
        return self._runner.call(self._request.result(wait))


async def _next(chunks: AsyncIterator[OutputChunk]) -> OutputChunk:
    return await chunks.__anext__()


class Operator:
    """The operator's side, blocking: list, approve and deny requests waiting for a human."""

    def __init__(self, runner: _LoopThread, operator: AsyncOperator) -> None:
        self._runner = runner
        self._operator = operator

    @classmethod
    def connect(
        cls,
        home: str | os.PathLike[str] | None = None,
        url: str | None = None,
        creds: str | os.PathLike[str] | None = None,
        *,
        approver_key: str | os.PathLike[str] | None = None,
    ) -> Operator:
        """Connects as the `operator` user (see `AsyncOperator.connect`)."""
        runner = _LoopThread()
        try:
            operator = runner.call(AsyncOperator.connect(home, url, creds, approver_key=approver_key))
        except BaseException:
            runner.stop()
            raise
        return cls(runner, operator)

    def close(self) -> None:
        try:
            self._runner.call(self._operator.close())
        finally:
            self._runner.stop()

    def __enter__(self) -> Operator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def list_overrides(self) -> list[PendingOverride]:
        """Requests waiting for a human, as the override-gate shows them to an approver."""
        return self._runner.call(self._operator.list_overrides())

    def approve(self, request_id: str, reason: str, who: str | None = None) -> None:
        """Lets a waiting request run; `reason` is recorded in the decision and the audit log.
        OverrideError when it is not waiting or the gate refuses the answer."""
        self._runner.call(self._operator.approve(request_id, reason, who))

    def deny(self, request_id: str, reason: str, who: str | None = None) -> None:
        """Refuses a waiting request (it ends as denied); `reason` is recorded."""
        self._runner.call(self._operator.deny(request_id, reason, who))


def list_overrides(home: str | os.PathLike[str] | None = None) -> list[PendingOverride]:
    """Requests waiting for a human, from the stack in `home` (default `$AIRLOCK_HOME`)."""
    with Operator.connect(home) as operator:
        return operator.list_overrides()


def approve_override(
    request_id: str, reason: str, who: str | None = None, home: str | os.PathLike[str] | None = None
) -> None:
    """Approves a waiting request with the approver key of `home`."""
    with Operator.connect(home) as operator:
        operator.approve(request_id, reason, who)


def deny_override(
    request_id: str, reason: str, who: str | None = None, home: str | os.PathLike[str] | None = None
) -> None:
    """Denies a waiting request with the approver key of `home`."""
    with Operator.connect(home) as operator:
        operator.deny(request_id, reason, who)
