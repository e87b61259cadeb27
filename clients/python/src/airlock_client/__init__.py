"""Airlock's Python client: Mai submits code, reads its output and result, and verifies the audit
receipt offline; operators answer override requests.

    from airlock_client import Client

    with Client.connect() as client:          # the stack of $AIRLOCK_HOME
        result = client.run("print('hello')")
        print(result.stdout, result.exit_code)
        client.verify_receipt(result)         # True, or raises ReceiptError

`AsyncClient` offers the same methods as coroutines. The wire contract it speaks is described in
`docs/clients.md` of the Airlock repository.
"""

from .aio import AsyncClient, AsyncOperator, AsyncRequest, verify_receipt
from .errors import (
    AirlockError,
    DeniedError,
    ExecutionFailedError,
    ExpiredError,
    OverrideError,
    ReceiptError,
    RefusedError,
    RequestError,
    UnavailableError,
    ViolationError,
    WireError,
)
from .keys import SigningKey, VerifierKey
from .results import Finding, OutputChunk, PendingOverride, Receipt, Result, Usage, Violation
from .sync import Client, Operator, Request, approve_override, deny_override, list_overrides

__all__ = [
    "AirlockError",
    "AsyncClient",
    "AsyncOperator",
    "AsyncRequest",
    "Client",
    "DeniedError",
    "ExecutionFailedError",
    "ExpiredError",
    "Finding",
    "Operator",
    "OutputChunk",
    "OverrideError",
    "PendingOverride",
    "Receipt",
    "ReceiptError",
    "RefusedError",
    "Request",
    "RequestError",
    "Result",
    "SigningKey",
    "UnavailableError",
    "Usage",
    "VerifierKey",
    "Violation",
    "ViolationError",
    "WireError",
    "approve_override",
    "deny_override",
    "list_overrides",
    "verify_receipt",
]
