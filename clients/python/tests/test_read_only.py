"""Read-only internet for a program that uses `requests` and `httpx`, as a user would write it:
`client.submit(code, packages=["requests", "httpx"], network="read-only")`. The packages come
from the stack's local index (real wheels, pinned in data/http-clients.txt, downloaded by
ops/install-deps); the page comes from a real HTTPS origin pinned as the allow-listed host
`docs.test`. Both libraries fetch it through the run's proxy with their default settings (the
proxy and the run's CA reach them through the environment the executor sets); a POST with
each is refused by the proxy, never reaches the origin, and every request is an `egress` event
in the audit log."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from airlock_client import Client, Operator

from .conftest import DOCS_PAGE, HttpsOrigin, Stack, http_client_pins, missing_wheels

PROGRAM = """
import requests, httpx
def show(name, fetch):
    try:
        response = fetch()
        print(f"{name}: {response.status_code} {response.text[:300]!r}", flush=True)
    except Exception as e:
        print(f"{name}: error {type(e).__name__}: {e}"[:400], flush=True)
show("requests get", lambda: requests.get("https://docs.test/page", timeout=20))
show("requests post", lambda: requests.post("https://docs.test/page", data=b"secret=requests", timeout=20))
with httpx.Client(timeout=20) as client:
    show("httpx get", lambda: client.get("https://docs.test/page"))
    show("httpx post", lambda: client.post("https://docs.test/page", content=b"secret=httpx"))
print("versions", requests.__version__, httpx.__version__)
"""


def line(stdout: str, name: str) -> str:
    found = [l for l in stdout.splitlines() if l.startswith(f"{name}: ")]
    assert found, f"no line for {name} in:\n{stdout}"
    return found[0]


def egress_events(stack: Stack, request_id: str) -> list[dict[str, Any]]:
    """The request's `egress` events (method, host, url, allowed, status, bytes, reason) from
    the audit log (`airlock audit replay --json`), once its terminal entry is there."""
    deadline = time.monotonic() + 30
    while True:
        out = stack.airlock("audit", "replay", "--request", request_id, "--json")
        assert out.returncode == 0, out.stderr
        events = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]
        if any(e.get("kind") == "terminal" for e in events) or time.monotonic() > deadline:
            return [e["event"]["data"] for e in events if e.get("kind") == "egress"]
        time.sleep(0.5)


def test_requests_and_httpx_fetch_an_allowed_page_and_their_posts_are_refused_and_logged(
    client: Client, operator: Operator, stack: Stack, https_origin: HttpsOrigin
) -> None:
    pins = http_client_pins()
    missing = missing_wheels(pins)
    if missing:
        pytest.fail(f"the wheelhouse lacks {missing}: run ops/install-deps")
    wanted = [spec for spec in pins if spec.split("==")[0] in ("requests", "httpx")]
    request = client.submit(PROGRAM, packages=wanted, network="read-only")
    # The packages' own code is rated as external code before the gate decides; where that
    # asks a human, the operator approves here, as the data-stack test does.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if request.status().stage in ("approved", "denied", "running", "ended"):
            break
        if any(p.request_id == request.request_id for p in operator.list_overrides()):
            operator.approve(request.request_id, "requests and httpx, pinned", who="pytest")
            break
        time.sleep(0.5)
    result = request.result(600)
    assert result.ok, result.to_json()
    out = result.stdout
    versions = {spec.split("==")[0]: spec.split("==")[1] for spec in wanted}
    assert f"versions {versions['requests']} {versions['httpx']}" in out, out
    for client_name in ("requests", "httpx"):
        assert line(out, f"{client_name} get") == f"{client_name} get: 200 {DOCS_PAGE!r}", out
        post = line(out, f"{client_name} post")
        assert post.startswith(f"{client_name} post: 405 ") and "POST is refused" in post, out
    # The origin saw the two GETs and never a POST.
    assert https_origin.requests.count(("GET", "/page")) >= 2, https_origin.requests
    assert not any(method == "POST" for method, _ in https_origin.requests), https_origin.requests

    # The request's log holds the installs' fetches from the index and the program's own.
    events = egress_events(stack, result.request_id)
    installs = [e for e in events if e["host"] == "index.test"]
    assert installs and all(e["allowed"] and e["method"] == "GET" for e in installs), installs
    program = [e for e in events if e["host"] != "index.test"]
    allowed = [e for e in program if e["allowed"]]
    refused = [e for e in program if not e["allowed"]]
    assert len(allowed) == 2, program
    assert all(
        e["method"] == "GET" and e["url"] == "https://docs.test/page" and e["status"] == 200 for e in allowed
    ), allowed
    assert len(refused) == 2, program
    assert all(e["method"] == "POST" and e["host"] == "docs.test" and e["reason"] for e in refused), refused
