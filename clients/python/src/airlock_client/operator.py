"""The operator's side over asyncio: list the requests waiting for a human, approve or deny them
with answers signed by an approver key."""

from __future__ import annotations

import asyncio
import getpass
import json
import os

from nats.aio.msg import Msg

from . import subjects
from .connection import Connection, open_connection
from .errors import AirlockError, OverrideError, UnavailableError, WireError
from .keys import KeyFormatError, SigningKey, signed_payload
from .results import PendingOverride
from .wire import Envelope, new_traceparent, now_ms, pack

#: Domain string of override-answer signatures.
ANSWER_DOMAIN = "airlock/override-answer/v1"
#: How long the gate has to confirm an answer.
ANSWER_CONFIRM_WAIT = 15.0


class AsyncOperator:
    """The operator's side: list the requests waiting for a human, approve or deny them with
    answers signed by the approver key (`$AIRLOCK_HOME/keys/approver.key`)."""

    def __init__(self, connection: Connection, approver: SigningKey | None) -> None:
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
        """Connects as the `operator` user of the stack in `home` (default `$AIRLOCK_HOME`), or
        to `url` with the nkey seed file `creds`; answers are signed with `approver_key`
        (default `keys/approver.key` of the home)."""
        connection, located = await open_connection(home, url, creds, "operator")
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
        """Requests waiting for a human, as the override-gate reports them.

        PermissionDeniedError when the credentials are not the operator's; UnavailableError
        when the gate does not answer."""
        reply = await self._connection.request(subjects.GATE_PENDING_ENDPOINT, b"", timeout=10)
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
        settled: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

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
                refusal = await asyncio.wait_for(settled, ANSWER_CONFIRM_WAIT)
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
