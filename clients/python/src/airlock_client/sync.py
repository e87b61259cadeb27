"""The blocking client: the asyncio client run on an event loop in a thread of its own, so it
works from plain scripts and from inside programs that already run a loop."""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import Future
from typing import Any, AsyncIterator, Coroutine, Iterator, Mapping, Sequence, TypeVar

from . import subjects
from .aio import DEFAULT_TIMEOUT, AsyncClient, AsyncOperator, AsyncRequest, verify_receipt
from .keys import VerifierKey
from .results import OutputChunk, PendingOverride, Result

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
    """Mai's side of Airlock, blocking: `run` code and get its `Result`, or `submit` it and read
    its output as it happens. See `AsyncClient` for the meaning of each argument."""

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
        audit_keys: Sequence[str | VerifierKey] | None = None,
    ) -> Client:
        runner = _LoopThread()
        try:
            client = runner.call(AsyncClient.connect(home, url, creds, user=user, audit_keys=audit_keys))
        except BaseException:
            runner.stop()
            raise
        return cls(runner, client)

    def close(self) -> None:
        try:
            self._runner.call(self._client.close())
        finally:
            self._runner.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
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
        return self._runner.call(
            self._client.run(
                code,
                language,
                origin,
                trust,
                packages,
                args,
                env,
                stdin,
                timeout,
                label=label,
                revises=revises,
                deadline=deadline,
                receipt=receipt,
                traceparent=traceparent,
            )
        )

    def submit(
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
    ) -> Request:
        request = self._runner.call(
            self._client.submit(
                code,
                language,
                origin,
                trust,
                packages,
                args,
                env,
                stdin,
                label=label,
                revises=revises,
                deadline=deadline,
                receipt=receipt,
                traceparent=traceparent,
            )
        )
        return Request(self._runner, request)

    def attach(self, request_id: str, *, receipt: bool = True) -> Request:
        return Request(self._runner, self._runner.call(self._client.attach(request_id, receipt=receipt)))

    @property
    def audit_keys(self) -> list[str | VerifierKey]:
        """The auditor verifier keys receipts are checked against."""
        return self._client.audit_keys

    def verify_receipt(self, result: Result, keys: Sequence[str | VerifierKey] | None = None) -> bool:
        """True when the receipt is valid; raises ReceiptError otherwise (no I/O)."""
        return verify_receipt(result, keys if keys is not None else self._client.audit_keys)


class Request:
    """A submitted request, blocking: `output()` yields chunks as they are produced, `result()`
    waits for the end."""

    def __init__(self, runner: _LoopThread, request: AsyncRequest) -> None:
        self._runner = runner
        self._request = request

    @property
    def request_id(self) -> str:
        return self._request.request_id

    @property
    def traceparent(self) -> str | None:
        return self._request.traceparent

    def output(self) -> Iterator[OutputChunk]:
        chunks: AsyncIterator[OutputChunk] = self._request.output()
        while True:
            try:
                yield self._runner.call(_next(chunks))
            except StopAsyncIteration:
                return

    def result(self, timeout: float = DEFAULT_TIMEOUT) -> Result:
        return self._runner.call(self._request.result(timeout))


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
        return self._runner.call(self._operator.list_overrides())

    def approve(self, request_id: str, reason: str, who: str | None = None) -> None:
        self._runner.call(self._operator.approve(request_id, reason, who))

    def deny(self, request_id: str, reason: str, who: str | None = None) -> None:
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
