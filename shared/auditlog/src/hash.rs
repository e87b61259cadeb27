//! SHA-256 tree hashes with RFC 6962 domain separation.

use sha2::{Digest, Sha256};
use std::fmt;

/// A SHA-256 output: a leaf hash, a node hash or a tree root.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    pub const ZERO: Hash = Hash([0; 32]);

    pub fn from_slice(bytes: &[u8]) -> Option<Hash> {
        bytes.try_into().ok().map(Hash)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn from_hex(text: &str) -> Option<Hash> {
        let bytes = hex::decode(text).ok()?;
        Self::from_slice(&bytes)
    }

    pub fn to_base64(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }

    pub fn from_base64(text: &str) -> Option<Hash> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
        Self::from_slice(&bytes)
    }
}

impl AsRef<[u8]> for Hash {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({})", self.to_hex())
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl serde::Serialize for Hash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Hash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes: serde_bytes::ByteBuf = serde::Deserialize::deserialize(d)?;
        Hash::from_slice(&bytes).ok_or_else(|| serde::de::Error::invalid_length(bytes.len(), &"32 bytes"))
    }
}

/// RFC 6962 leaf hash: SHA-256(0x00 || entry).
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(entry);
    Hash(h.finalize().into())
}

/// RFC 6962 interior node hash: SHA-256(0x01 || left || right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left.0);
    h.update(right.0);
    Hash(h.finalize().into())
}

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Hash(Sha256::digest([]).into())
}
