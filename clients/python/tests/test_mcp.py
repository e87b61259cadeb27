"""`airlock mcp` driven by the official MCP Python SDK (`mcp`) as the real client, over stdio and
over streamable HTTP: the tools it lists, runs of Python and bash, a run that waits for a person
(progress notifications while it waits, `get_result` after the answer), receipts checked, and
HTTP refused without the bearer token. Every call is an ordinary Airlock request of client user
`mcp`."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import select
import subprocess
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ImageContent

from airlock_client import Operator

from .conftest import BLOCKED_SCRIPT, MCP_CLIENT, OVERRIDE_TIMEOUT_SECS, Stack


@asynccontextmanager
async def stdio_session(stack: Stack) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(
        command=str(stack.binary), args=["--home", str(stack.home), "mcp"], env=dict(os.environ)
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


class HttpServer:
    """`airlock mcp --http 127.0.0.1:0`, its URL read from what it prints."""

    def __init__(self, stack: Stack) -> None:
        self.process = subprocess.Popen(
            [str(stack.binary), "--home", str(stack.home), "mcp", "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        deadline = time.monotonic() + 30
        line = ""
        while time.monotonic() < deadline and "serving MCP at" not in line:
            ready, _, _ = select.select([self.process.stderr], [], [], 1)
            if ready:
                line = self.process.stderr.readline()
                if not line and self.process.poll() is not None:
                    break
        found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        if found is None:
            self.stop()
            pytest.fail(f"airlock mcp --http did not start: {line!r}")
        self.url = found.group(1)
        self.token = (stack.home / "mcp" / "token").read_text().strip()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[ClientSession]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"},
                                  timeout=httpx2.Timeout(30, read=300))
        async with http:
            async with streamable_http_client(self.url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session


@pytest.fixture(scope="module")
def http_server(stack: Stack) -> Any:
    server = HttpServer(stack)
    yield server
    server.stop()


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def test_over_stdio_the_tools_run_python_and_bash_and_prove_their_receipts(stack: Stack) -> None:
    async def scenario() -> None:
        async with stdio_session(stack) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert {"run_python", "run_bash", "get_result", "check_receipt", "cancel_run"} <= set(tools)
            assert "code" in tools["run_python"].input_schema["properties"]

            ran = await session.call_tool("run_python", {"code": "import sys\nprint(6 * 7)\nsys.exit(3)\n",
                                                         "label": "answer.py"})
            assert not ran.is_error, _text(ran)
            structured = ran.structured_content
            assert structured is not None
            assert structured["outcome"] == "finished" and structured["exit_code"] == 3
            assert structured["stdout"] == "42\n"
            request_id = structured["request_id"]
            assert request_id.startswith(f"{MCP_CLIENT}."), "submitted as the MCP server's own client user"
            assert "exit code 3" in _text(ran) and "stdout:\n42" in _text(ran)

            bash = await session.call_tool("run_bash", {"code": 'echo "$1-$GREETING"; read line; echo "$line"',
                                                        "args": ["one"], "env": {"GREETING": "hi"},
                                                        "stdin": "from stdin\n"})
            assert bash.structured_content is not None
            assert bash.structured_content["stdout"] == "one-hi\nfrom stdin\n", _text(bash)

            receipt = await session.call_tool("check_receipt", {"request_id": request_id})
            assert not receipt.is_error, _text(receipt)
            assert receipt.structured_content is not None and receipt.structured_content["verified"] is True
            assert receipt.structured_content["audit"], "the entries of the request"

            long = await session.call_tool("run_python", {"code": "import time\nprint('started', flush=True)\n"
                                                          "time.sleep(60)\n", "wait_seconds": 2})
            assert long.structured_content is not None and long.structured_content["ended"] is False, _text(long)
            stopped = await session.call_tool("cancel_run", {"request_id": long.structured_content["request_id"],
                                                             "reason": "the user asked to stop"})
            assert not stopped.is_error, _text(stopped)
            assert stopped.structured_content is not None
            assert stopped.structured_content["outcome"] == "cancelled", _text(stopped)
            assert stopped.structured_content["stdout"] == "started\n", _text(stopped)
            again = await session.call_tool("cancel_run", {"request_id": request_id, "reason": "too late"})
            assert again.is_error and "already ended (finished)" in _text(again)

            # Files in (text and base64), files out: a PNG comes back as an MCP image, a CSV as text.
            png = base64.b64decode(
                "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
            )
            made = await session.call_tool("run_python", {
                "code": "import shutil\nshutil.copy('pixel.png', 'out/pixel.png')\n"
                        "open('out/rows.csv', 'w').write(open('data.csv').read().upper())\n",
                "files": {"data.csv": "a,b\n1,2\n"},
                "files_base64": {"pixel.png": base64.b64encode(png).decode()},
            })
            assert not made.is_error, _text(made)
            images = [block for block in made.content if isinstance(block, ImageContent)]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            assert base64.b64decode(images[0].data) == png
            assert "out/rows.csv (text/csv, 8 bytes):\nA,B\n1,2\n" in _text(made)
            assert made.structured_content is not None
            assert [f["name"] for f in made.structured_content["files"]] == ["pixel.png", "rows.csv"]

            refused = await session.call_tool("run_python", {"code": "print(1)", "env": {"LD_PRELOAD": "/x.so"}})
            assert refused.is_error and "LD_PRELOAD" in _text(refused)
            foreign = await session.call_tool("check_receipt", {"request_id": "mai.someone-elses"})
            assert foreign.is_error

    asyncio.run(scenario())


def test_over_http_a_run_that_waits_for_a_person_reports_its_stages_then_its_result(
    stack: Stack, http_server: HttpServer, operator: Operator
) -> None:
    async def scenario() -> None:
        stages: list[str] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            stages.append(message or "")

        async with http_server.session() as session:
            first = await session.call_tool(
                "run_python",
                {"code": BLOCKED_SCRIPT, "origin": "external", "wait_seconds": 3},
                progress_callback=on_progress,
            )
            assert not first.is_error, _text(first)
            assert first.structured_content is not None and first.structured_content["ended"] is False
            request_id = first.structured_content["request_id"]
            assert first.structured_content["status"] == "waiting_for_human", _text(first)
            assert "get_result" in _text(first)
            assert any("assessed: BLOCKED" in s for s in stages), stages
            assert any("waiting for a human" in s for s in stages), stages

            pending = {p.request_id: p for p in await asyncio.to_thread(operator.list_overrides)}
            assert request_id in pending, "an ordinary override request, listed to the operator"
            await asyncio.to_thread(operator.approve, request_id, "reviewed: it only prints", "pytest-mcp")

            done = await session.call_tool("get_result", {"request_id": request_id,
                                                          "wait_seconds": OVERRIDE_TIMEOUT_SECS + 30})
            assert not done.is_error, _text(done)
            assert done.structured_content is not None
            assert done.structured_content["stdout"] == "decoded\n"
            assert done.structured_content["approver"]["who"] == "pytest-mcp"
            assert "approved by pytest-mcp" in _text(done)

    asyncio.run(scenario())


def test_over_http_nothing_is_served_without_the_token(http_server: HttpServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "intruder", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for extra in ({}, {"Authorization": "Bearer wrong"}):
        reply = httpx2.post(http_server.url, json=body, headers={**headers, **extra}, timeout=10)
        assert reply.status_code == 401, reply.text
    # A web page cannot drive it either: a browser's Origin is refused even with the token.
    reply = httpx2.post(http_server.url, json=body, timeout=10,
                        headers={**headers, "Authorization": f"Bearer {http_server.token}",
                                 "Origin": "http://evil.example"})
    assert reply.status_code == 403, reply.text


def test_http_is_refused_on_an_address_other_than_loopback(stack: Stack) -> None:
    refused = stack.airlock("mcp", "--http", "0.0.0.0:0", timeout=30)
    assert refused.returncode != 0 and "loopback" in refused.stderr


def test_without_credentials_for_its_user_the_server_says_what_to_configure(stack: Stack, tmp_path: Path) -> None:
    missing = stack.airlock("mcp", "--user", "nobody-here", timeout=30)
    assert missing.returncode != 0
    assert "extra_users" in missing.stderr and "nobody-here" in missing.stderr
