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


def _pins(filename: str) -> dict[str, str]:
    """A pins file of `data/` as {"numpy==2.4.6": sha256, ...}."""
    pins = {}
    for line in (DATA / filename).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            spec, _, digest = line.partition(" --hash=sha256:")
            pins[spec.strip()] = digest.strip()
    return pins


def data_stack_pins() -> dict[str, str]:
    """`data/data-stack.txt`: the scientific stack."""
    return _pins("data-stack.txt")


def http_client_pins() -> dict[str, str]:
    """`data/http-clients.txt`: requests and httpx."""
    return _pins("http-clients.txt")


def missing_wheels(pins: dict[str, str]) -> list[str]:
    """The pinned wheels the wheelhouse lacks (ops/install-deps downloads them)."""
    present = {hashlib.sha256(p.read_bytes()).hexdigest() for p in wheelhouse().glob("*.whl")}
    return [spec for spec, digest in pins.items() if digest not in present]


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
    known = {*data_stack_pins().values(), *http_client_pins().values()}
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


#: The page the HTTPS origin `docs.test` serves at /page (the read-only test fetches it).
DOCS_PAGE = "read-only page of docs.test, for the Python client"


@dataclass
class HttpsOrigin:
    """A real HTTPS server for `docs.test` on loopback, with a CA of its own that the stack's
    proxy trusts as an upstream root (as an operator pins a mirror). `requests` lists each
    request it received as (method, path)."""

    url: str
    ca_file: Path
    requests: list[tuple[str, str]]


def _origin_certificates(root: Path) -> None:
    """A CA and a leaf for docs.test signed by it, as PEM files in `root`."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "docs.test origin CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "docs.test")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("docs.test")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (root / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (root / "cert.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (root / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


@pytest.fixture(scope="session")
def https_origin() -> Iterator[HttpsOrigin]:
    import ssl

    root = Path(tempfile.mkdtemp(prefix="airlock-client-origin-"))
    _origin_certificates(root)
    (root / "www").mkdir()
    (root / "www" / "page").write_text(DOCS_PAGE)
    seen: list[tuple[str, str]] = []

    class Handler(_QuietHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root / "www"), **kwargs)

        def do_GET(self) -> None:
            seen.append(("GET", self.path))
            super().do_GET()

        def do_HEAD(self) -> None:
            seen.append(("HEAD", self.path))
            super().do_HEAD()

        def do_POST(self) -> None:
            seen.append(("POST", self.path))
            self.send_error(500, "the origin must never see a POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(root / "cert.pem", root / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield HttpsOrigin(url=f"https://127.0.0.1:{server.server_address[1]}", ca_file=root / "ca.pem", requests=seen)
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(root, ignore_errors=True)


def _configure(config_file: Path, index_url: str, origin: HttpsOrigin) -> None:
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
        # Read-only internet (test_read_only.py): docs.test alone, served by the HTTPS origin.
        'read_only_hosts = ["docs.test"]',
        f'upstream_roots = ["{origin.ca_file}"]',
        "[executor.egress.pinned]",
        f'"index.test" = "{index_url}"',
        f'"docs.test" = "{origin.url}"',
        "",
    ]
    config_file.write_text("\n".join(lines))
    written = tomllib.loads(config_file.read_text())
    assert written["gate"]["override_timeout_secs"] == OVERRIDE_TIMEOUT_SECS
    assert written["executor"]["egress"]["pinned"]["index.test"] == index_url
    assert written["executor"]["egress"]["pinned"]["docs.test"] == origin.url
    assert written["clients"]["extra_users"] == [EXTRA_CLIENT, MCP_CLIENT]


@pytest.fixture(scope="session")
def stack(package_index: str, https_origin: HttpsOrigin) -> Iterator[Stack]:
    binary = airlock_bin()
    home = Path(tempfile.mkdtemp(prefix="airlock-client-test-"))
    running = Stack(home=home, binary=binary, index_url=package_index)
    init = running.airlock("init")
    if init.returncode != 0:
        pytest.fail(f"airlock init failed: {init.stderr}")
    _configure(home / "airlock.toml", package_index, https_origin)
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
