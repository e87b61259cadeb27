"""How long the Python client's offline receipt check takes (`verify_receipt`: signature,
inclusion, every field of the result against the logged event), and reading the home's
auditor keys as `client.verify_receipt` does before each check. On the real receipts captured
from a stack in `clients/python/tests/data/receipts.json`; needs `airlock_client` installed.

    target/python-client-venv/bin/python ops/bench/python_receipt_check.py

Prints, per captured case, the best of 5 rounds of N checks, in milliseconds per check.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Callable

from airlock_client import Result, verify_receipt
from airlock_client.home import Home
from airlock_client.results import Receipt
from airlock_client.wire import Envelope

CAPTURED = Path(__file__).resolve().parents[2] / "clients" / "python" / "tests" / "data" / "receipts.json"
ROUNDS = 5
CHECKS = 2000


def per_check_ms(check: Callable[[], object]) -> float:
    return min(timeit.repeat(check, number=CHECKS, repeat=ROUNDS)) / CHECKS * 1e3


def main() -> int:
    captured = json.loads(CAPTURED.read_text())
    keys: list[str] = captured["auditor_keys"]
    for name, case in sorted(captured["cases"].items()):
        terminal = Envelope.decode_on(case["terminal_subject"], base64.b64decode(case["terminal"]))
        receipt = Receipt.decode(base64.b64decode(case["receipt"]))
        result = Result.from_terminal(case["request_id"], terminal.data, receipt)
        print(f"verify_receipt, {name}: {per_check_ms(lambda: verify_receipt(result, keys)):.3f} ms")
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "keys").mkdir()
        (Path(root) / "keys" / "auditor.pub").write_text(keys[0] + "\n")
        home = Home(Path(root))
        print(f"Home.auditor_keys, auditor.pub only: {per_check_ms(home.auditor_keys):.3f} ms")
        (Path(root) / "keys" / "auditor.keys").write_text(f"{keys[0]} retired=2026-11-27T12:00:01.456Z\n")
        print(f"Home.auditor_keys, with a key set: {per_check_ms(home.auditor_keys):.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
