//! A signed payload: the bytes that were signed travel with the signature, so verification never
//! depends on re-encoding a value the same way twice.

use crate::keys::{SigningKey, VerifierKey, VerifierSet};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Signed {
    /// MessagePack (named fields) of the signed value.
    #[schemars(with = "Vec<u8>")]
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
    /// Name of the signing key.
    pub key_name: String,
    /// Key id (see `keys::key_id`).
    pub key_id: u32,
    /// Ed25519 signature over `domain || 0x00 || payload`.
    #[schemars(with = "Vec<u8>")]
    #[serde(with = "serde_bytes")]
    pub signature: Vec<u8>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("signed by {name}+{key_id:08x}, which is not a trusted key")]
    UnknownKey { name: String, key_id: u32 },
    #[error("signature by {name}+{key_id:08x} does not verify")]
    BadSignature { name: String, key_id: u32 },
    #[error("signed payload is not a valid {what}: {detail}")]
    BadPayload { what: &'static str, detail: String },
}

fn message(domain: &str, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(domain.len() + 1 + payload.len());
    m.extend_from_slice(domain.as_bytes());
    m.push(0);
    m.extend_from_slice(payload);
    m
}

impl Signed {
    /// Signs `value` for the purpose named by `domain` (so a signature for one purpose can
    /// never be presented as one for another).
    pub fn sign<T: Serialize>(value: &T, domain: &str, key: &SigningKey) -> Self {
        // Encoding a value of the protocol's own types into a Vec cannot fail.
        let payload = rmp_serde::to_vec_named(value).unwrap_or_default();
        let signature = key.sign(&message(domain, &payload)).to_vec();
        Self {
            payload,
            key_name: key.name().to_owned(),
            key_id: key.key_id(),
            signature,
        }
    }

    /// Checks the signature against the trusted keys, then decodes the payload.
    pub fn verify<T: DeserializeOwned>(
        &self,
        domain: &str,
        what: &'static str,
        trusted: &VerifierSet,
    ) -> Result<(T, VerifierKey), SignatureError> {
        let key = trusted
            .find(&self.key_name, self.key_id)
            .ok_or_else(|| SignatureError::UnknownKey {
                name: self.key_name.clone(),
                key_id: self.key_id,
            })?;
        if !key.verify(&message(domain, &self.payload), &self.signature) {
            return Err(SignatureError::BadSignature {
                name: self.key_name.clone(),
                key_id: self.key_id,
            });
        }
        let value = rmp_serde::from_slice(&self.payload).map_err(|e| SignatureError::BadPayload {
            what,
            detail: e.to_string(),
        })?;
        Ok((value, key.clone()))
    }

    /// Decodes the payload without checking the signature, for display and auditing only.
    pub fn peek<T: DeserializeOwned>(&self) -> Option<T> {
        rmp_serde::from_slice(&self.payload).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct V {
        a: u32,
    }

    #[test]
    fn sign_verify_and_tamper() {
        let k = SigningKey::generate("t/k").unwrap();
        let other = SigningKey::generate("t/k").unwrap();
        let set = VerifierSet::new(vec![k.verifier()]);
        let s = Signed::sign(&V { a: 7 }, "d1", &k);
        assert_eq!(s.verify::<V>("d1", "v", &set).unwrap().0, V { a: 7 });
        assert!(matches!(
            s.verify::<V>("d2", "v", &set),
            Err(SignatureError::BadSignature { .. })
        ));
        let mut t = s.clone();
        t.payload = rmp_serde::to_vec_named(&V { a: 8 }).unwrap();
        assert!(matches!(
            t.verify::<V>("d1", "v", &set),
            Err(SignatureError::BadSignature { .. })
        ));
        let forged = Signed::sign(&V { a: 7 }, "d1", &other);
        assert!(forged.verify::<V>("d1", "v", &set).is_err());
    }
}
