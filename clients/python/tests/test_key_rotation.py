"""The auditor's key rotated on the running stack, as `docs/operations.md` says
(`airlock keys rotate auditor`: no restart, the auditor re-reads its key on SIGHUP): receipts
signed before the rotation keep verifying in Python, through the home's key set
(`keys/auditor.keys`), in a client connected before the rotation and in a result saved as JSON
and loaded after it; the new key signs what follows; and the retired key alone vouches for
nothing logged after its retirement."""

from __future__ import annotations

import json

import pytest

from airlock_client import Client, ReceiptError, Result, TrustedKey, VerifierKey, parse_key_set, verify_receipt
from airlock_client.home import Home
from airlock_client.tlog import Checkpoint

from .conftest import Stack


def _signers(result: Result) -> set[tuple[str, int]]:
    assert result.checkpoint is not None
    return {(s.name, s.key_id) for s in Checkpoint.parse(result.checkpoint).note.signatures}


def test_receipts_signed_before_a_rotation_keep_verifying_after_it(stack: Stack, client: Client) -> None:
    home = Home.locate(stack.home)
    before = client.run("print('before the rotation')\n")
    assert client.verify_receipt(before)
    old_key = VerifierKey.parse(home.verifier_key("auditor").read_text().strip())
    saved = json.dumps(before.to_json())

    rotated = stack.airlock("keys", "rotate", "auditor", "--wait", "60s", timeout=120)
    assert rotated.returncode == 0, f"{rotated.stdout}{rotated.stderr}\n{stack.diagnostics()}"

    # The rotate command's files: the key set (the new key current, the old one retired) and
    # the new current key.
    key_set = parse_key_set(home.auditor_key_set().read_text())
    new_key = VerifierKey.parse(home.verifier_key("auditor").read_text().strip())
    assert new_key != old_key
    assert [k.key for k in key_set] == [new_key, old_key]
    assert key_set[0].retired_ms is None and key_set[1].retired_ms is not None
    # `airlock audit pubkey` prints the same set, readable by the same parser.
    pubkey = stack.airlock("audit", "pubkey")
    assert pubkey.returncode == 0, pubkey.stderr
    assert [k.key for k in parse_key_set(pubkey.stdout)] == [new_key, old_key]

    after = client.run("print('after the rotation')\n")
    assert (new_key.name, new_key.key_id) in _signers(after)
    assert (old_key.name, old_key.key_id) not in _signers(after), "the retired key signs nothing new"

    # The client connected before the rotation reads the home's keys again: both verify.
    assert client.verify_receipt(before) and client.verify_receipt(after)
    # So does a client connected now, and the module's verify_receipt with the home's keys or
    # with the set `audit pubkey` printed.
    with Client.connect(home=stack.home) as fresh:
        assert fresh.verify_receipt(before) and fresh.verify_receipt(after)
    for keys in (home.auditor_keys(), parse_key_set(pubkey.stdout)):
        assert verify_receipt(before, keys) and verify_receipt(after, keys)
    # A result saved before the rotation, loaded after it, verifies; edited, it does not.
    loaded = Result.from_json(json.loads(saved))
    assert verify_receipt(loaded, home.auditor_keys())
    with pytest.raises(ReceiptError, match="stdout"):
        verify_receipt(Result.from_json({**json.loads(saved), "stdout": "forged\n"}), home.auditor_keys())

    # Without the key set, the old receipt does not verify with the current key alone ...
    with pytest.raises(ReceiptError, match="no signature by a trusted key"):
        verify_receipt(before, [new_key])
    # ... and the old key, retired, vouches for nothing logged after its retirement, even if
    # it had signed it (here: trusted as retired before the new entry's time).
    retired = key_set[1]
    assert verify_receipt(before, [retired])
    with pytest.raises(ReceiptError):
        verify_receipt(after, [retired])
    with pytest.raises(ReceiptError, match="retired before entry"):
        verify_receipt(before, [TrustedKey(old_key, retired_ms=0)])
