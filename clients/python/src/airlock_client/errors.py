"""Typed errors. Each says why in `reason`; those about a request carry its `Result` too, so a
denied or refused request's receipt can still be verified."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .results import Result, Violation


#: Refusals that say "not now" rather than "not this": the same submission may succeed later.
RETRYABLE_REFUSALS: dict[str, str] = {
    "rate_limited": "this client submits faster than its rate limit ([clients] rate_per_second, burst); "
    "wait about a second and submit again",
    "too_many_in_flight": "this client has as many requests in flight as it may ([clients] max_in_flight); "
    "submit again once one of them has ended",
    "dead_lettered": "a service failed to handle the request repeatedly and set it aside; "
    "submitting it again (under a new id) may succeed once the service recovers",
}


class AirlockError(Exception):
    """Anything the client reports; `reason` is the human-readable cause."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnavailableError(AirlockError):
    """The stack cannot be reached, did not accept the submission, or gave no result in time.

    A request whose result did not come in time may still finish: `request_id` names it, and
    `client.attach(request_id)` waits for it again.
    """

    def __init__(self, reason: str, request_id: str | None = None) -> None:
        super().__init__(reason)
        self.request_id = request_id


class PermissionDeniedError(AirlockError):
    """The server refused this NATS user what it asked: credentials of the wrong user (a client's
    seed used for operator calls, say), or a call outside the user's role. Retrying cannot help;
    `docs/clients.md` lists what each user may do."""


class RequestError(AirlockError):
    """The request ended without running to completion; `result` is its terminal event."""

    def __init__(self, result: Result, reason: str) -> None:
        super().__init__(reason)
        self.result = result
        self.request_id = result.request_id


class DeniedError(RequestError):
    """The gate's policy or a human said no (`result.approver` says who)."""


class ExpiredError(RequestError):
    """Nobody answered the override request before its deadline (the gate denies it:
    `result.decision` is "denied" with `result.approver` `{"by": "deadline"}`), or the request or
    its decision was past its deadline before the code could run (`result.outcome` "expired")."""


class RequestCancelledError(RequestError):
    """The request's client cancelled it (`request.cancel`, `client.cancel`, `airlock cancel`,
    or a cancelled asyncio task waiting for it): it never ran, or it was stopped, and
    `result.stdout`/`result.stderr` hold what it wrote until then. (Not `asyncio.CancelledError`:
    this is the request's end, told to whoever waits for it.)"""


class ViolationError(RequestError):
    """The code exceeded a limit and was killed; `violation` says which and by how much."""

    def __init__(self, result: Result, reason: str, violation: Violation) -> None:
        super().__init__(result, reason)
        self.violation = violation


class RefusedError(RequestError):
    """The services would not act on the request (invalid, rate-limited, a duplicate, ...).

    `reason` is the services' text and `refusal` its code when the stack gives one
    (`invalid_request`, `rate_limited`, `duplicate_request`, `dead_lettered`, ...); codes this
    client does not know are refusals too. `retryable` says whether the same submission may
    succeed later (`rate_limited`, `too_many_in_flight`, `dead_lettered`), and `hint` what to do.
    """

    @property
    def refusal(self) -> str | None:
        return self.result.refusal

    @property
    def retryable(self) -> bool:
        """True when the refusal means "not now" rather than "not this"."""
        return self.refusal in RETRYABLE_REFUSALS

    @property
    def hint(self) -> str | None:
        """What to do about a retryable refusal (None for the others: fix the request)."""
        return RETRYABLE_REFUSALS.get(self.refusal or "")


class ExecutionFailedError(RequestError):
    """The request was approved but Airlock could not run it (the sandbox failed, the
    executor stopped while it ran, packages could not be installed)."""


class WireError(AirlockError):
    """A message that is not a valid envelope of the version this client speaks."""


class ReceiptError(AirlockError):
    """A receipt that does not prove what it claims: malformed, badly signed, not included,
    or about another entry than the result it came with."""


class OverrideError(AirlockError):
    """An override answer the gate did not take: the request is not waiting, or the answer was
    refused (a key it does not trust, a digest that does not match, too late)."""
