"""Ed25519 keys in the C2SP signed-note encodings, and Airlock's signed payloads.

Verifier keys are `name+hex(key id)+base64(0x01 || public key)`, private keys
`PRIVATE+KEY+name+hex(key id)+base64(0x01 || seed)`; the key id is the first four bytes of
`SHA-256(name || 0x0A || 0x01 || public key)`. The cryptography itself is the `cryptography`
package's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

#: The signature-type byte of Ed25519 in signed notes.
ED25519_TYPE = 0x01


class KeyFormatError(ValueError):
    """Text that is not a key in the signed-note encoding, or whose key id does not match."""


def strict_b64decode(text: str) -> bytes:
    """Standard base64 that accepts exactly one spelling of each byte string.

    Python's decoder ignores set padding bits ("AB==" and "AA==" both give one zero byte): a
    verifier that accepted both would let a proof be altered without being refused.
    """
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise KeyFormatError(f"not base64: {error}") from error
    if base64.b64encode(data).decode("ascii") != text:
        raise KeyFormatError("not canonical base64")
    return data


def key_id(name: str, public: bytes) -> int:
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([ED25519_TYPE]) + public).digest()
    return int.from_bytes(digest[:4], "big")


def check_name(name: str) -> None:
    if not name or "+" in name or any(c.isspace() for c in name):
        raise KeyFormatError(f"key name {name!r} is empty or contains a space or '+'")


def _split(text: str) -> tuple[str, int, bytes]:
    """`name+hex8+base64` → (name, key id, decoded data)."""
    name, sep1, rest = text.partition("+")
    hex_id, sep2, data = rest.partition("+")
    if not sep1 or not sep2:
        raise KeyFormatError("a key is name+keyid+base64")
    check_name(name)
    if len(hex_id) != 8 or any(c not in "0123456789abcdef" for c in hex_id):
        raise KeyFormatError(f"key id {hex_id!r} is not 8 lowercase hex digits")
    raw = strict_b64decode(data)
    if len(raw) != 33 or raw[0] != ED25519_TYPE:
        raise KeyFormatError("key data is not 0x01 followed by 32 bytes")
    return name, int(hex_id, 16), raw[1:]


@dataclass(frozen=True)
class VerifierKey:
    """A public key with its signed-note name and id."""

    name: str
    key_id: int
    public: bytes

    @classmethod
    def parse(cls, text: str) -> VerifierKey:
        name, kid, public = _split(text.strip())
        if key_id(name, public) != kid:
            raise KeyFormatError(f"key id of {name} does not match its name and public key")
        return cls(name=name, key_id=kid, public=public)

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except InvalidSignature:
            return False
        return True

    def __str__(self) -> str:
        data = base64.b64encode(bytes([ED25519_TYPE]) + self.public).decode()
        return f"{self.name}+{self.key_id:08x}+{data}"


@dataclass(frozen=True)
class SigningKey:
    """A private key (such as the operator's approver key in `$AIRLOCK_HOME/keys/approver.key`)."""

    name: str
    private: Ed25519PrivateKey

    @classmethod
    def parse(cls, text: str) -> SigningKey:
        text = text.strip()
        if not text.startswith("PRIVATE+KEY+"):
            raise KeyFormatError("a private key starts with PRIVATE+KEY+")
        name, kid, seed = _split(text[len("PRIVATE+KEY+") :])
        private = Ed25519PrivateKey.from_private_bytes(seed)
        if key_id(name, _public_bytes(private)) != kid:
            raise KeyFormatError(f"key id of {name} does not match its name and key")
        return cls(name=name, private=private)

    @property
    def key_id(self) -> int:
        return key_id(self.name, _public_bytes(self.private))

    def verifier(self) -> VerifierKey:
        return VerifierKey(name=self.name, key_id=self.key_id, public=_public_bytes(self.private))

    def sign(self, message: bytes) -> bytes:
        return self.private.sign(message)


def _public_bytes(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def signed_payload(payload: bytes, domain: str, key: SigningKey) -> dict[str, object]:
    """A `Signed` value (schema `Signed`): the payload bytes travel with a signature over
    `domain || 0x00 || payload`, so a signature for one purpose never passes for another."""
    return {
        "payload": payload,
        "key_name": key.name,
        "key_id": key.key_id,
        "signature": key.sign(domain.encode() + b"\x00" + payload),
    }
