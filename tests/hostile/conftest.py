"""One stack per test module: started once, shared by the module's tests, stopped at the end."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import pytest

from wire import Stack

# Small limits so that a flood is visible within a test: each client may have this many
# requests in flight; a second client user exists for fairness tests.
CONFIG = {
    "clients": 'extra_users = ["mai-b"]\nrate_per_second = 20.0\nburst = 40\nmax_in_flight = 8\n',
    "gate": "override_timeout = \"60s\"\n",
    # Approvals may be remembered, so that the chain tests can try to stretch one.
    "gate.policy": "approve_again_max = \"1h\"\n",
}


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    s = Stack.start(CONFIG)
    try:
        yield s
    finally:
        s.stop()


def run(coro: Any) -> Any:
    return asyncio.run(coro)
