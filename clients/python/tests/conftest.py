"""Shared fixtures: the repository's contract files, and the real stack.

The `stack` fixture builds nothing: it runs the `airlock` binary the workspace built
(`$AIRLOCK_BIN`, default `<repo>/target/debug/airlock`) with `airlock up` in a temporary
`$AIRLOCK_HOME`, waits for `airlock status --wait 120`, and stops it at the end of the session.
A missing binary, Docker or nats-server fails the tests that need the stack; nothing is skipped.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import tomllib
import zipfile
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from airlock_client import Client, Operator

REPO = Path(__file__).resolve().parents[3]
SCHEMAS = REPO / "schemas"
MERKLE_VECTORS = REPO / "shared" / "auditlog" / "testdata" / "merkle-vectors"
DATA = Path(__file__).resolve().parent / "data"

#: How long a human has to answer an override in the test stack: long enough for the operator
#: test to list and deny, short enough for the expiry test to see a deadline pass.
OVERRIDE_TIMEOUT_SECS = 10

#: A client user besides mai, with Mai's rights under its own name.
EXTRA_CLIENT = "pyclient"
#: The client user `airlock mcp` submits as.
MCP_CLIENT = "mcp"

#: An external script the assessor rates BLOCKED (decoded code reaching exec) that is harmless
#: when it runs: it prints "decoded".
BLOCKED_SCRIPT = 'import base64\nexec(base64.b64decode("cHJpbnQoJ2RlY29kZWQnKQ=="))\n'


def airlock_bin() -> Path:
    explicit = os.environ.get("AIRLOCK_BIN")
    binary = Path(explicit) if explicit else REPO / "target" / "debug" / "airlock"
    if not binary.is_file():
        pytest.fail(
            f"{binary} is missing: build it first (`cargo build --bin airlock`, as ops/test does) or set AIRLOCK_BIN"
        )
    return binary


@dataclass
class Stack:
    """A running stack in a temporary home."""

    home: Path
    binary: Path
    index_url: str

    def airlock(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binary), "--home", str(self.home), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def diagnostics(self) -> str:
        """The last lines of `up` and every service log, for failure messages."""
        out = []
        files = [self.home / "up.log", self.home / "nats" / "server.log"]
        logs = self.home / "logs"
        if logs.is_dir():
            files.extend(sorted(logs.iterdir()))
        for path in files:
            if path.is_file():
                tail = path.read_text(errors="replace").splitlines()[-30:]
                out.append(f"--- {path} (last lines)\n" + "\n".join(tail))
        return "\n".join(out)


def _wheel(name: str, version: str, module_source: bytes) -> tuple[str, bytes]:
    """A pure-Python wheel holding one module, as bytes."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": module_source,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: airlock-client-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return f"{name}-{version}-py3-none-any.whl", buffer.getvalue()


def wheelhouse() -> Path:
    """Where ops/install-deps downloaded the data-stack wheels (`data/data-stack.txt`)."""
    return Path(os.environ.get("AIRLOCK_WHEELHOUSE", "/var/cache/airlock/wheelhouse"))


def data_stack_pins() -> dict[str, str]:
    """`data/data-stack.txt` as {"numpy==2.4.6": sha256, ...}."""
    pins = {}
    for line in (DATA / "data-stack.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            spec, _, digest = line.partition(" --hash=sha256:")
            pins[spec.strip()] = digest.strip()
    return pins


def _project(filename: str) -> str:
    """A wheel's PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", filename.split("-")[0]).lower()


def _write_index(root: Path) -> None:
    """A PEP 503 simple index: `airlock-client-probe 1.0`, made here, and the wheelhouse's real
    wheels (linked, not copied)."""
    files = root / "files"
    files.mkdir(parents=True)
    filename, wheel = _wheel("airlock_client_probe", "1.0", b"VALUE = 'probe from the local index'\n")
    (files / filename).write_bytes(wheel)
    known = {digest for digest in data_stack_pins().values()}
    for path in sorted(wheelhouse().glob("*.whl")):
        if hashlib.sha256(path.read_bytes()).hexdigest() in known:
            (files / path.name).symlink_to(path)
    projects: dict[str, list[str]] = {}
    for path in sorted(files.iterdir()):
        projects.setdefault(_project(path.name), []).append(path.name)
    for name, filenames in projects.items():
        project = root / "simple" / name
        project.mkdir(parents=True)
        links = "".join(
            f'<a href="../../files/{f}#sha256={hashlib.sha256((files / f).read_bytes()).hexdigest()}">{f}</a>\n'
            for f in filenames
        )
        (project / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def package_index() -> Iterator[str]:
    """A local package index on loopback, as an operator's pinned mirror would be."""
    root = Path(tempfile.mkdtemp(prefix="airlock-client-index-"))
    _write_index(root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(root, ignore_errors=True)


def _configure(config_file: Path, index_url: str) -> None:
    """The test settings, written into the `airlock.toml` that `airlock init` made."""
    text = config_file.read_text()
    lines = text.splitlines()
    if "[gate]" not in lines:
        pytest.fail(f"{config_file} has no [gate] section:\n{text}")
    at = lines.index("[gate]") + 1
    lines.insert(at, f"override_timeout_secs = {OVERRIDE_TIMEOUT_SECS}")
    lines += [
        "",
        "[clients]",
        f'extra_users = ["{EXTRA_CLIENT}", "{MCP_CLIENT}"]',
        "",
        "[executor.egress]",
        'allow_hosts = ["index.test"]',
        'index_host = "index.test"',
        'index_path = "/simple/"',
        "[executor.egress.pinned]",
        f'"index.test" = "{index_url}"',
        "",
    ]
    config_file.write_text("\n".join(lines))
    written = tomllib.loads(config_file.read_text())
    assert written["gate"]["override_timeout_secs"] == OVERRIDE_TIMEOUT_SECS
    assert written["executor"]["egress"]["pinned"]["index.test"] == index_url
    assert written["clients"]["extra_users"] == [EXTRA_CLIENT, MCP_CLIENT]


@pytest.fixture(scope="session")
def stack(package_index: str) -> Iterator[Stack]:
    binary = airlock_bin()
    home = Path(tempfile.mkdtemp(prefix="airlock-client-test-"))
    running = Stack(home=home, binary=binary, index_url=package_index)
    init = running.airlock("init")
    if init.returncode != 0:
        pytest.fail(f"airlock init failed: {init.stderr}")
    _configure(home / "airlock.toml", package_index)
    log = open(home / "up.log", "wb")
    up = subprocess.Popen(
        [str(binary), "--home", str(home), "up", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        status = running.airlock("status", "--wait", "120", timeout=180)
        if status.returncode != 0 or up.poll() is not None:
            pytest.fail(
                f"the stack did not come up (status exit {status.returncode}):\n{status.stdout}{status.stderr}\n"
                f"{running.diagnostics()}"
            )
        yield running
    finally:
        # As Ctrl-C would: `up` stops the services and its nats-server.
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def client(stack: Stack) -> Iterator[Client]:
    """Mai's blocking client on the session's stack."""
    with Client.connect(home=stack.home) as connected:
        yield connected


@pytest.fixture(scope="session")
def operator(stack: Stack) -> Iterator[Operator]:
    """The operator's blocking client on the session's stack."""
    with Operator.connect(home=stack.home) as connected:
        yield connected
