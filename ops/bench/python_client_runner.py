"""The Python client in one process, as a contender in `airlock bench pipeline`.

A long-lived helper, so that Python start-up, imports and the NATS connection are paid once, not
per run. It connects to the stack of `$AIRLOCK_HOME` (or `--home DIR`) with `airlock_client`,
prints one JSON line `{"ready": true}` (or `{"ready": false, "error": ...}` and exits 1), then
answers each JSON line on stdin with one JSON line on stdout:

    in:  {}                                  the benchmark's trivial script, receipt included
         {"code": "...", "receipt": true, "verify": false, "expect_stdout": "hello\\n"}
    out: {"ok": true, "ms": 9.8, "request_id": "...", "receipt": true}
         {"ok": true, ..., "verify_ms": 0.4}  with "verify": true
         {"ok": false, "error": "...", "ms": ...}

`ms` is the wall time from just before submitting to the result with its audit receipt in hand
(the path Mai's code takes with `client.run`); `verify_ms`, when asked, is the time to verify
the receipt in Python afterwards. End of input ends the helper.

Needs `airlock_client` importable by this Python (`pip install clients/python`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

SCRIPT = "print('hello')\n"


def answer(line: str, client: Any, airlock_client: Any) -> dict[str, Any]:
    try:
        request = json.loads(line) if line.strip() else {}
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
    except ValueError as error:
        return {"ok": False, "error": f"bad request line: {error}"}
    code = request.get("code", SCRIPT)
    want_receipt = bool(request.get("receipt", True))
    expected = request.get("expect_stdout", "hello\n" if "code" not in request else None)
    started = time.perf_counter()
    try:
        result = client.run(code, receipt=want_receipt)
    except airlock_client.AirlockError as error:
        return {"ok": False, "error": f"{type(error).__name__}: {error.reason}", "ms": _ms_since(started)}
    elapsed = _ms_since(started)
    reply: dict[str, Any] = {"ok": True, "ms": elapsed, "request_id": result.request_id}
    reply["receipt"] = result.receipt is not None
    if want_receipt and result.receipt is None:
        reply.update(ok=False, error="no audit receipt arrived")
    if not result.ok or (expected is not None and result.stdout != expected):
        reply.update(ok=False, error=f"exit {result.exit_code} stdout {result.stdout!r} stderr {result.stderr!r}")
    if request.get("verify") and result.receipt is not None:
        verify_started = time.perf_counter()
        try:
            client.verify_receipt(result)
        except airlock_client.ReceiptError as error:
            reply.update(ok=False, error=f"receipt does not verify: {error.reason}")
        reply["verify_ms"] = _ms_since(verify_started)
    return reply


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _say(value: dict[str, Any]) -> None:
    print(json.dumps(value), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", help="the stack's $AIRLOCK_HOME (default: the environment's)")
    options = parser.parse_args()
    try:
        import airlock_client
    except ImportError as error:
        _say({"ready": False, "error": f"airlock_client is not importable by {sys.executable}: {error}"})
        return 1
    try:
        client = airlock_client.Client.connect(home=options.home)
    except airlock_client.AirlockError as error:
        _say({"ready": False, "error": f"{type(error).__name__}: {error.reason}"})
        return 1
    with client:
        _say({"ready": True})
        for line in sys.stdin:
            _say(answer(line, client, airlock_client))
    return 0


if __name__ == "__main__":
    sys.exit(main())
