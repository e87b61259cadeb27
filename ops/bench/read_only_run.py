"""What a whole read-only run costs, as a user gets it: `airlock run --json` as a new process per
request, waiting for its audit receipt, with `--network read-only` against `--network none` in
the same run, interleaved, on a stack of its own. Three contenders:

- `none`: `print('hi')` with no network (from the warm pool);
- `read-only`: the same program granted read-only internet (a network, a proxy and a CA of
  its own for the run, so never a warm container);
- `read-only + fetch`: one GET of a 20 KiB page through the run's proxy from an HTTPS origin
  on loopback, pinned as the allow-listed host `docs.test` (as tests/tests/read_only.rs does).

    python3 ops/bench/read_only_run.py [--runs 20] [--airlock target/release/airlock] [--runtime runsc]

With `--runtime runsc` the stack's policy runs Mai's code under gVisor (every contender), where
a read-only run has no network interface and reaches its proxy through a unix socket and the
bootstrap's relay (docs/sandbox.md); each result must say so or the bench stops.

Needs Docker with the sandbox image (`airlock image build`), nats-server and openssl. Prints
p50/p90 per contender in milliseconds, and what each one adds over `none`.
"""

from __future__ import annotations

import argparse
import http.server
import json
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = b"x" * 20 * 1024

PRINT = "print('hi')\n"
FETCH = (
    "import urllib.request\n"
    "body = urllib.request.urlopen('https://docs.test/page', timeout=20).read()\n"
    "print(len(body))\n"
)


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def start_origin(root: Path) -> tuple[http.server.ThreadingHTTPServer, Path]:
    """An HTTPS server for docs.test on loopback, with a CA of its own (made by openssl)."""
    subj = ["-subj"]
    run = partial(subprocess.run, check=True, capture_output=True, cwd=root)
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", *subj, "/CN=docs.test bench CA"])
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", "key.pem", "-out", "leaf.csr", *subj, "/CN=docs.test"])
    (root / "san.ext").write_text("subjectAltName=DNS:docs.test\n")
    run(["openssl", "x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "cert.pem", "-days", "1", "-extfile", "san.ext"])
    www = root / "www"
    www.mkdir()
    (www / "page").write_bytes(PAGE)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(www)))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(root / "cert.pem", root / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, root / "ca.pem"


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="measured runs per contender (after one warm-up each)")
    parser.add_argument("--airlock", default=str(REPO / "target" / "release" / "airlock"))
    parser.add_argument("--settle", type=float, default=1.0, help="seconds of quiet before each run")
    parser.add_argument("--runtime", choices=["runc", "runsc"], default="runc",
                        help="the runtime the stack's policy gives Mai's code")
    args = parser.parse_args()
    airlock = Path(args.airlock)
    if not airlock.is_file():
        sys.exit(f"{airlock} is missing: build it (cargo build --release --bin airlock) or pass --airlock")

    work = Path(tempfile.mkdtemp(prefix="airlock-bench-read-only-"))
    server, ca = start_origin(work)
    home = work / "home"
    up = None
    try:
        subprocess.run([str(airlock), "--home", str(home), "init"], check=True, capture_output=True)
        with open(home / "airlock.toml", "a") as config:
            config.write(
                "\n[executor.egress]\n"
                'read_only_hosts = ["docs.test"]\n'
                f'upstream_roots = ["{ca}"]\n'
                "[executor.egress.pinned]\n"
                f'"docs.test" = "https://127.0.0.1:{server.server_address[1]}"\n'
            )
            if args.runtime == "runsc":
                config.write(
                    '[executor.runtimes]\navailable = ["runc", "runsc"]\n'
                    '[gate.policy.runtimes]\ngenerated = "runsc"\nunavailable = "deny"\n'
                )
        log = open(work / "up.log", "wb")
        up = subprocess.Popen([str(airlock), "--home", str(home), "up", "--port", "0"],
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        subprocess.run([str(airlock), "--home", str(home), "status", "--wait", "120"], capture_output=True, timeout=180)
        if up.poll() is not None:
            sys.exit(f"airlock up stopped; see {work / 'up.log'}")
        programs = work / "programs"
        programs.mkdir()
        (programs / "print.py").write_text(PRINT)
        (programs / "fetch.py").write_text(FETCH)
        contenders = {
            "none": (programs / "print.py", []),
            "read-only": (programs / "print.py", ["--network", "read-only"]),
            "read-only + fetch": (programs / "fetch.py", ["--network", "read-only"]),
        }
        expected = {"none": "hi", "read-only": "hi", "read-only + fetch": str(len(PAGE))}
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        for round_ in range(args.runs + 1):
            for name, (program, extra) in contenders.items():
                time.sleep(args.settle)
                started = time.perf_counter()
                out = subprocess.run([str(airlock), "--home", str(home), "run", "--json", str(program), *extra],
                                     capture_output=True, text=True, timeout=120)
                elapsed = (time.perf_counter() - started) * 1e3
                result = json.loads(out.stdout)
                if (result.get("stdout", "").strip() != expected[name] or not result.get("receipt")
                        or result.get("runtime") != args.runtime):
                    sys.exit(f"{name}: unexpected result {json.dumps(result)[:2000]}")
                if round_ > 0:
                    samples[name].append(elapsed)
        base50, base90 = percentile(samples["none"], 50), percentile(samples["none"], 90)
        print(f"airlock run as a new process, with the receipt, under {args.runtime}; {args.runs} runs each, interleaved")
        print(f"{'contender':<20} {'p50 ms':>8} {'p90 ms':>8} {'+p50 ms':>8} {'+p90 ms':>8}")
        for name, values in samples.items():
            p50, p90 = percentile(values, 50), percentile(values, 90)
            print(f"{name:<20} {p50:>8.0f} {p90:>8.0f} {p50 - base50:>8.0f} {p90 - base90:>8.0f}")
        print(f"(mean of none {statistics.mean(samples['none']):.0f} ms)")
        return 0
    finally:
        if up is not None:
            up.send_signal(signal.SIGINT)
            try:
                up.wait(timeout=60)
            except subprocess.TimeoutExpired:
                up.kill()
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
