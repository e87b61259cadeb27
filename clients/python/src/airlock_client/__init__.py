"""Airlock's Python client: Mai submits code, follows its status and output, reads its result
and verifies the audit receipt offline; operators answer override requests.

    from airlock_client import Client

    with Client.connect() as client:          # the stack of $AIRLOCK_HOME
        result = client.run("print('hello')")
        print(result.stdout, result.exit_code)
        client.verify_receipt(result)         # True, or raises ReceiptError

`AsyncClient` offers the same methods as coroutines. The wire contract it speaks is described in
`docs/clients.md` of the Airlock repository.
"""

from .aio import AsyncClient, verify_receipt
from .errors import (
    AirlockError,
    DeniedError,
    ExecutionFailedError,
    ExpiredError,
    RequestCancelledError,
    OverrideError,
    PermissionDeniedError,
    ReceiptError,
    RefusedError,
    RequestError,
    UnavailableError,
    ViolationError,
    WireError,
)
from .keys import SigningKey, VerifierKey
from .keyset import KeySetError, TrustedKey, parse_key_set
from .operator import AsyncOperator
from .receipts import AuditKey, ResultMismatchError
from .request import AsyncRequest
from .results import (
    Approver,
    CoApprover,
    Finding,
    OutputChunk,
    OutputFile,
    PendingOverride,
    Receipt,
    Result,
    Usage,
    Violation,
)
from .session import AsyncSession, Session, SessionFilesError
from .status import Status
from .submission import Limits, Submission, SubmissionFields
from .sync import Client, Operator, Request, approve_override, deny_override, list_overrides
from .types import Decision, Language, Network, Origin, Outcome, Stage, Trust, Verdict, ViolationKind

__all__ = [
    "AirlockError",
    "Approver",
    "AsyncClient",
    "AsyncOperator",
    "AsyncRequest",
    "AuditKey",
    "Client",
    "CoApprover",
    "Decision",
    "DeniedError",
    "ExecutionFailedError",
    "ExpiredError",
    "RequestCancelledError",
    "Finding",
    "KeySetError",
    "Language",
    "Operator",
    "Origin",
    "Outcome",
    "OutputChunk",
    "OutputFile",
    "AsyncSession",
    "Session",
    "SessionFilesError",
    "OverrideError",
    "PendingOverride",
    "PermissionDeniedError",
    "Receipt",
    "ReceiptError",
    "RefusedError",
    "Request",
    "RequestError",
    "Result",
    "ResultMismatchError",
    "SigningKey",
    "Stage",
    "Status",
    "Limits",
    "Submission",
    "SubmissionFields",
    "Network",
    "Trust",
    "TrustedKey",
    "UnavailableError",
    "Usage",
    "Verdict",
    "VerifierKey",
    "Violation",
    "ViolationError",
    "ViolationKind",
    "WireError",
    "approve_override",
    "deny_override",
    "list_overrides",
    "parse_key_set",
    "verify_receipt",
]
