#!/usr/bin/env python3
"""Writes execution-digest.json: an example request, the wheels its packages resolved to, a grant,
and both digests, computed here independently of the Rust code (docs/clients.md, "The execution
digest"). `shared/protocol/src/digest.rs` recomputes them from the file and must agree.

    python3 schemas/vectors/execution_digest.py > schemas/vectors/execution-digest.json

Needs the `msgpack` package (the Python client's own dependency).
"""

import hashlib
import json
import sys

import msgpack


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest(form: dict) -> str:
    # Maps keep the insertion order given (the order the Rust structs declare their fields);
    # strings are MessagePack str, integers their shortest form.
    return sha256(msgpack.packb(form, use_bin_type=True))


CODE = b"import sys\nprint(sys.argv[1:], sys.stdin.read())\n"
STDIN = b"hello\n"
REQUEST = {
    "language": "python",
    "code": list(CODE),
    "origin": "generated",
    "trust": "unknown",
    "inputs": {"args": ["--n", "3"], "env": {"LANG": "C.UTF-8", "MODE": "fast"}, "stdin": list(STDIN)},
    "packages": ["six==1.16.0", "tablefmt-rt"],
    "revises": None,
    "deadline_ms": None,
    "label": "vector.py",
}
# What the packages resolved to (listed out of order: the digest sorts them by name, version,
# file, digest).
WHEELS = [
    {
        "name": "tablefmt-rt",
        "version": "1.1",
        "file": "tablefmt_rt-1.1-py3-none-any.whl",
        "sha256": sha256(b"tablefmt_rt-1.1 wheel bytes"),
    },
    {
        "name": "six",
        "version": "1.16.0",
        "file": "six-1.16.0-py2.py3-none-any.whl",
        "sha256": "sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254",
    },
]
GRANT = {
    "quota": "untrusted",
    "limits": {
        "memory_bytes": 268435456,
        "cpu_millis": 500,
        "pids": 64,
        "wall_ms": 10000,
        "output_bytes": 262144,
        "disk_bytes": 16777216,
        "open_files": 128,
    },
    "runtime": "runc",
    "network": "none",
}
# The same request granted read-only internet: the grant then names the hosts, after the network
# (a grant without network leaves the list out, so its digest is the one above).
READ_ONLY_GRANT = {**GRANT, "network": "read-only", "read_only_hosts": ["pypi.org", "*.example.org"]}
CLIENT = "mai"


def request_digest() -> str:
    wheels = sorted(WHEELS, key=lambda w: (w["name"], w["version"], w["file"], w["sha256"]))
    return digest(
        {
            "domain": "airlock/request/v1",
            "client": CLIENT,
            "language": REQUEST["language"],
            "interpreter": "python3",
            "code": sha256(CODE),
            "args": REQUEST["inputs"]["args"],
            "env": dict(sorted(REQUEST["inputs"]["env"].items())),
            "stdin": sha256(STDIN),
            "packages": [
                {"name": w["name"], "version": w["version"], "file": w["file"], "sha256": w["sha256"]} for w in wheels
            ],
            "network": "none",
        }
    )


def main() -> None:
    request = request_digest()
    execution = digest({"domain": "airlock/execution/v1", "request": request, "grant": GRANT})
    read_only = digest({"domain": "airlock/execution/v1", "request": request, "grant": READ_ONLY_GRANT})
    vector = {
        "description": (
            "The execution digest (docs/clients.md): request_digest is SHA-256 of the MessagePack map "
            "{domain, client, language, interpreter, code, args, env, stdin, packages, network}, where "
            "packages are the wheels the request's packages resolved to, each {name, version, file, sha256}, "
            "sorted; execution_digest is SHA-256 of {domain, request, grant}, the grant being "
            "{quota, limits, runtime, network} and, when the network is read-only, read_only_hosts "
            "(read_only_execution_digest, with read_only_grant). Written by "
            "execution_digest.py beside this file (an independent Python encoding) and checked by "
            "shared/protocol/src/digest.rs."
        ),
        "request": REQUEST,
        "client": CLIENT,
        "wheels": WHEELS,
        "grant": GRANT,
        "request_digest": request,
        "execution_digest": execution,
        "read_only_grant": READ_ONLY_GRANT,
        "read_only_execution_digest": read_only,
    }
    json.dump(vector, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
