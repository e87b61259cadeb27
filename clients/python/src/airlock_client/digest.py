"""The request and execution digests (`docs/clients.md`, "The execution digest";
`shared/protocol/src/digest.rs`): what the gate signs and the executor checks. The client that
submitted a request knows its request digest, so a receipt's check can prove that what was
approved and ran is the code and inputs this client sent.

Both are `sha256:` + SHA-256 of a MessagePack map with named fields in the order the Rust
structs declare them; `schemas/vectors/execution-digest.json` holds an example.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Sequence

from .wire import pack

REQUEST_DIGEST_DOMAIN = "airlock/request/v1"
EXECUTION_DIGEST_DOMAIN = "airlock/execution/v1"
#: The interpreter each language runs under (`digest::interpreter`).
INTERPRETERS = {"python": "python3", "bash": "bash"}
#: `Limits`, in its declared order.
LIMIT_FIELDS = ("memory_bytes", "cpu_millis", "pids", "wall_ms", "output_bytes", "disk_bytes", "open_files")
WHEEL_FIELDS = ("name", "version", "file", "sha256")


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def request_digest(request: Mapping[str, Any], client: str, wheels: Sequence[Mapping[str, str]] = ()) -> str:
    """The request digest of an `ExecutionRequest` (the `submitted` event's data, as
    `Submission.to_wire` builds it) submitted by `client`, with the wheels its packages resolved
    to (known only to the assessor: a client computes it for requests without packages)."""
    inputs = request.get("inputs") or {}
    language = str(request.get("language"))
    env = inputs.get("env") or {}
    resolved = sorted({tuple(str(w[f]) for f in WHEEL_FIELDS) for w in wheels})
    return sha256_digest(
        pack(
            {
                "domain": REQUEST_DIGEST_DOMAIN,
                "client": client,
                "language": language,
                "interpreter": INTERPRETERS.get(language, language),
                "code": sha256_digest(bytes(request.get("code") or b"")),
                "args": list(inputs.get("args") or []),
                # A BTreeMap in Rust: keys in byte order, which for str is code point order.
                "env": {k: env[k] for k in sorted(env)},
                "stdin": sha256_digest(bytes(inputs.get("stdin") or b"")),
                "packages": [dict(zip(WHEEL_FIELDS, w)) for w in resolved],
                "network": request.get("network") or "none",
                # Left out when there are none, as the services leave it out.
                **(
                    {"files": [[f["name"], sha256_digest(bytes(f["content"]))] for f in inputs["files"]]}
                    if inputs.get("files")
                    else {}
                ),
            }
        )
    )


def execution_digest(request: str, grant: Mapping[str, Any]) -> str:
    """The execution digest: a request digest with what an approval grants (quota, limits,
    runtime, network and, for a read-only network, its hosts), as the gate signs it."""
    limits = grant.get("limits") or {}
    form: dict[str, Any] = {
        "quota": grant.get("quota"),
        "limits": {name: limits.get(name) for name in LIMIT_FIELDS},
        "runtime": grant.get("runtime") or "runc",
        "network": grant.get("network") or "none",
    }
    # Left out when empty, as the gate's form leaves it out (grants without network keep
    # the digests they had before hosts were part of a grant).
    if grant.get("read_only_hosts"):
        form["read_only_hosts"] = list(grant["read_only_hosts"])
    return sha256_digest(pack({"domain": EXECUTION_DIGEST_DOMAIN, "request": request, "grant": form}))
