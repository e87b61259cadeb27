//! Identifiers and digests that appear in subjects and signatures.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdError {
    #[error("id is empty")]
    Empty,
    #[error("id is {0} bytes long, at most 64 are allowed")]
    TooLong(usize),
    #[error("id {0:?} has a character outside [A-Za-z0-9_-] (ids are NATS subject tokens)")]
    BadCharacter(String),
    #[error("digest {0:?} is not of the form sha256:<64 lowercase hex digits>")]
    BadDigest(String),
    #[error("id {0:?} is reserved")]
    Reserved(&'static str),
    #[error("request id {0:?} names no client (`<client>.<id>`)")]
    NoClient(String),
    #[error("{0:?} is not a client name (lowercase letters, digits, `-` and `_`, starting with a letter, at most 32)")]
    BadClient(String),
}

fn check_token(s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty);
    }
    if s.len() > 64 {
        return Err(IdError::TooLong(s.len()));
    }
    if !s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(IdError::BadCharacter(s.to_owned()));
    }
    Ok(())
}

macro_rules! token_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A fresh, time-ordered (UUID v7) id.
            pub fn new() -> Self {
                Self(uuid::Uuid::now_v7().to_string())
            }
            pub fn parse(s: &str) -> Result<Self, IdError> {
                check_token(s)?;
                Ok(Self(s.to_owned()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Names one execution request from submission to its terminal event: `<client>.<local>`, the
/// client's NATS user name, a dot, and the id the client chose (`[A-Za-z0-9_-]{1,64}`).
///
/// The client part makes ids tenants' own: a client can submit only under its own name (the
/// server's permissions vouch for `airlock.submit.<client>.`), so no client can choose an id
/// another client will use; and every subject that carries the id carries the client as a token
/// of its own, by which the permissions let each client read only its own results.
///
/// Ids without a client part (a bare `<local>`) still parse: logs written before ids named their
/// client hold them, and so do unit tests; the assessor admits no such submission.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct RequestId(String);

impl RequestId {
    /// A fresh, time-ordered (UUID v7) id with no client part.
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }

    /// A fresh, time-ordered id for a submission by `client`.
    pub fn new_for(client: &str) -> Result<Self, IdError> {
        Self::for_client(client, &uuid::Uuid::now_v7().to_string())
    }

    /// The id `<client>.<local>`, where `local` is what the client chose.
    pub fn for_client(client: &str, local: &str) -> Result<Self, IdError> {
        check_client(client)?;
        check_token(local)?;
        if local == crate::subjects::UNKNOWN_REQUEST {
            return Err(IdError::Reserved(crate::subjects::UNKNOWN_REQUEST));
        }
        Ok(Self(format!("{client}.{local}")))
    }

    /// Reads an id: `<client>.<local>` or a bare `<local>`.
    pub fn parse(s: &str) -> Result<Self, IdError> {
        match s.split_once('.') {
            Some((client, local)) => {
                check_client(client)?;
                check_token(local)?;
            }
            None => check_token(s)?,
        }
        Ok(Self(s.to_owned()))
    }

    /// Reads an id as the assessor admits a submission: with a client part, and not the
    /// reserved `unknown`.
    pub fn parse_client(s: &str) -> Result<Self, IdError> {
        let id = Self::parse(s)?;
        if id.client().is_none() {
            return Err(IdError::NoClient(crate::text::clip(s, 100)));
        }
        if id.local() == crate::subjects::UNKNOWN_REQUEST {
            return Err(IdError::Reserved(crate::subjects::UNKNOWN_REQUEST));
        }
        Ok(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The client that submitted the request, when the id names one.
    pub fn client(&self) -> Option<&str> {
        self.0.split_once('.').map(|(client, _)| client)
    }

    /// The part of the id the client chose.
    pub fn local(&self) -> &str {
        self.0.split_once('.').map_or(self.0.as_str(), |(_, local)| local)
    }

    /// The id under which refusals of messages naming no readable request are filed.
    pub fn unknown() -> Self {
        Self(crate::subjects::UNKNOWN_REQUEST.to_owned())
    }

    pub fn is_unknown(&self) -> bool {
        self.0 == crate::subjects::UNKNOWN_REQUEST
    }
}

impl Default for RequestId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for RequestId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, IdError> {
        Self::parse(s)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

fn check_client(s: &str) -> Result<(), IdError> {
    if crate::roles::valid_client_name(s) {
        Ok(())
    } else {
        Err(IdError::BadClient(crate::text::clip(s, 40)))
    }
}

token_id!(
    /// Names one message; unique per envelope.
    MessageId
);

/// `sha256:<hex>` of some bytes: what decisions sign and what humans compare.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct CodeDigest(String);

impl CodeDigest {
    pub fn of(bytes: &[u8]) -> Self {
        Self(format!("sha256:{}", hex::encode(Sha256::digest(bytes))))
    }
    pub fn parse(s: &str) -> Result<Self, IdError> {
        let ok = s
            .strip_prefix("sha256:")
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(IdError::BadDigest(s.to_owned()))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CodeDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for CodeDigest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Milliseconds since the Unix epoch, the unit of every timestamp on the wire.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_must_be_subject_tokens() {
        assert!(RequestId::parse("abc-DEF_123").is_ok());
        assert_eq!(RequestId::parse(""), Err(IdError::Empty));
        assert!(matches!(RequestId::parse("a.b.c"), Err(IdError::BadCharacter(_))));
        assert!(matches!(RequestId::parse("A.b"), Err(IdError::BadClient(_))));
        assert!(matches!(RequestId::parse(".b"), Err(IdError::BadClient(_))));
        assert!(matches!(RequestId::parse("a."), Err(IdError::Empty)));
        assert!(matches!(RequestId::parse("a*"), Err(IdError::BadCharacter(_))));
        assert!(matches!(RequestId::parse(">"), Err(IdError::BadCharacter(_))));
        assert!(matches!(RequestId::parse(&"x".repeat(65)), Err(IdError::TooLong(65))));
        assert!(RequestId::parse(RequestId::new().as_str()).is_ok());
    }

    #[test]
    fn request_ids_name_their_client() {
        let id = RequestId::parse("mai.0193-ab").unwrap();
        assert_eq!(id.client(), Some("mai"));
        assert_eq!(id.local(), "0193-ab");
        assert_eq!(RequestId::for_client("mai", "0193-ab").unwrap(), id);
        assert_eq!(RequestId::parse_client("mai.0193-ab").unwrap(), id);
        assert!(matches!(RequestId::parse_client("0193-ab"), Err(IdError::NoClient(_))));
        assert!(matches!(
            RequestId::parse_client("mai.unknown"),
            Err(IdError::Reserved(_))
        ));
        assert!(matches!(
            RequestId::for_client("mai", "a.b"),
            Err(IdError::BadCharacter(_))
        ));
        assert!(matches!(RequestId::for_client("Mai", "a"), Err(IdError::BadClient(_))));
        let fresh = RequestId::new_for("bob").unwrap();
        assert_eq!(fresh.client(), Some("bob"));
        assert_eq!(RequestId::parse("r1").unwrap().client(), None);
    }

    #[test]
    fn digest_is_sha256_of_bytes() {
        assert_eq!(
            CodeDigest::of(b"").as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(CodeDigest::parse("sha256:E3B0").is_err());
        assert!(CodeDigest::parse(CodeDigest::of(b"x").as_str()).is_ok());
    }

    #[test]
    fn deserializing_a_bad_id_fails() {
        let bad = serde_json::to_string("a.b.c").unwrap();
        assert!(serde_json::from_str::<RequestId>(&bad).is_err());
    }
}
