"""Captures real receipts from a running stack into `tests/data/receipts.json`, so the receipt
tests have real auditor output to check without a stack (the stack tests check fresh ones too).

    AIRLOCK_HOME=... python tests/capture_receipts.py

Each case keeps the terminal event and the receipt exactly as they were published (the bytes
read back from the streams), and the auditor's verifier key.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

from airlock_client import AsyncClient, RequestError, subjects
from airlock_client.aio import AsyncRequest

CASES: dict[str, dict[str, Any]] = {
    # Output small enough to stay inline in the entry.
    "hello": {"code": "print('hello')\n"},
    # Output over 256 bytes on both streams: the entry holds BLAKE3 blob references instead.
    "large-output": {"code": "import sys\nprint('o' * 900)\nprint('e' * 700, file=sys.stderr)\n"},
    # Findings in the terminal event, and a non-zero exit.
    "findings-and-exit-3": {"code": "import subprocess, sys\nsubprocess.run(['true'], shell=False)\nsys.exit(3)\n"},
    # Ended by the assessor before anything ran.
    "refused": {"code": "print(1)\n", "env": {"1BAD": "x"}},
}


async def _raw(client: AsyncClient, stream: str, subject: str) -> bytes:
    # A subscriber can see a message a moment before the stream has stored it: retry briefly.
    for _ in range(50):
        msg = await client._connection.direct_get(stream, subject)
        if msg is not None:
            return bytes(msg.data)
        await asyncio.sleep(0.1)
    raise SystemExit(f"nothing on {subject}")


async def capture() -> dict[str, Any]:
    client = await AsyncClient.connect()
    cases = {}
    for name, case in CASES.items():
        request: AsyncRequest = await client.submit(case["code"], env=case.get("env") or {})
        try:
            await request.result(60)
        except RequestError:
            pass
        rid = request.request_id
        cases[name] = {
            "request_id": rid,
            "terminal_subject": subjects.terminal_subject(rid),
            "terminal": base64.b64encode(await _raw(client, subjects.EVENTS_STREAM, subjects.terminal_subject(rid))).decode(),
            "receipt": base64.b64encode(await _raw(client, subjects.AUDIT_STREAM, subjects.receipt_subject(rid))).decode(),
        }
    keys = [str(k) for k in client.audit_keys]
    await client.close()
    return {"auditor_keys": keys, "cases": cases}


if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "data" / "receipts.json"
    out.write_text(json.dumps(asyncio.run(capture()), indent=1) + "\n")
    print(f"wrote {out}")
