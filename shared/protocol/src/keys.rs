//! Ed25519 keys in the C2SP signed-note encodings.
//!
//! One key format serves every signer in Airlock (the gate's decisions, approvers' override
//! answers, the auditor's checkpoints): verifier keys are `name+hex(keyid)+base64(0x01||pub)` and
//! private keys `PRIVATE+KEY+name+hex(keyid)+base64(0x01||seed)`, as the Go `note` package
//! writes them, so that standard tooling can read them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signer as _, Verifier as _};
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::Path;

/// The signature-type byte for Ed25519 in signed notes.
pub const ED25519_TYPE: u8 = 0x01;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("key name {0:?} is empty or contains a space or '+'")]
    BadName(String),
    #[error("malformed key: {0}")]
    Malformed(String),
    #[error("key id in {0:?} does not match its name and public key")]
    KeyIdMismatch(String),
    #[error("reading key file {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("key data is not base64")]
    Base64(#[from] base64::DecodeError),
    #[error("random number generator failed")]
    Random(#[from] getrandom::Error),
}

fn check_name(name: &str) -> Result<(), KeyError> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c == '+') {
        return Err(KeyError::BadName(name.to_owned()));
    }
    Ok(())
}

/// SHA-256(name || 0x0A || 0x01 || public key)[:4], big-endian.
pub fn key_id(name: &str, public: &[u8; 32]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', ED25519_TYPE]);
    h.update(public);
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

#[derive(Clone)]
pub struct SigningKey {
    name: String,
    key: ed25519_dalek::SigningKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({}+{:08x})", self.name, self.key_id())
    }
}

impl SigningKey {
    pub fn generate(name: &str) -> Result<Self, KeyError> {
        check_name(name)?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)?;
        Ok(Self {
            name: name.to_owned(),
            key: ed25519_dalek::SigningKey::from_bytes(&seed),
        })
    }

    pub fn from_seed(name: &str, seed: [u8; 32]) -> Result<Self, KeyError> {
        check_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            key: ed25519_dalek::SigningKey::from_bytes(&seed),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn key_id(&self) -> u32 {
        key_id(&self.name, &self.key.verifying_key().to_bytes())
    }

    pub fn verifier(&self) -> VerifierKey {
        VerifierKey {
            name: self.name.clone(),
            key: self.key.verifying_key(),
        }
    }

    /// An Ed25519 signature over `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// `PRIVATE+KEY+name+hex(keyid)+base64(0x01||seed)`.
    pub fn to_private_string(&self) -> String {
        let mut data = vec![ED25519_TYPE];
        data.extend_from_slice(&self.key.to_bytes());
        format!("PRIVATE+KEY+{}+{:08x}+{}", self.name, self.key_id(), B64.encode(data))
    }

    pub fn parse_private(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let rest = text
            .strip_prefix("PRIVATE+KEY+")
            .ok_or_else(|| KeyError::Malformed("private key does not start with PRIVATE+KEY+".into()))?;
        let (name, id, data) = split_key(rest)?;
        let data = B64.decode(data)?;
        if data.len() != 33 || data[0] != ED25519_TYPE {
            return Err(KeyError::Malformed(
                "private key data is not 0x01 || 32-byte seed".into(),
            ));
        }
        let seed: [u8; 32] = data[1..]
            .try_into()
            .map_err(|_| KeyError::Malformed("seed length".into()))?;
        let key = Self::from_seed(name, seed)?;
        if key.key_id() != id {
            return Err(KeyError::KeyIdMismatch(name.to_owned()));
        }
        Ok(key)
    }

    /// Reads a private key file, or creates one (mode 0600) with a new key when it is missing.
    pub fn load_or_generate(path: &Path, name: &str) -> Result<Self, KeyError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse_private(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::generate(name)?;
                key.write_private(path)?;
                Ok(key)
            }
            Err(source) => Err(KeyError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse_private(&text)
    }

    pub fn write_private(&self, path: &Path) -> Result<(), KeyError> {
        let io = |source| KeyError::Io {
            path: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        write_secret(path, format!("{}\n", self.to_private_string()).as_bytes()).map_err(io)
    }
}

/// Writes a file readable only by its owner.
pub fn write_secret(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn split_key(text: &str) -> Result<(&str, u32, &str), KeyError> {
    let mut parts = text.splitn(3, '+');
    let (Some(name), Some(id), Some(data)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(KeyError::Malformed(format!("{text:?} is not name+keyid+data")));
    };
    check_name(name)?;
    if id.len() != 8 {
        return Err(KeyError::Malformed(format!("key id {id:?} is not 8 hex digits")));
    }
    let id = u32::from_str_radix(id, 16).map_err(|_| KeyError::Malformed(format!("key id {id:?} is not hex")))?;
    Ok((name, id, data))
}

#[derive(Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    key: ed25519_dalek::VerifyingKey,
}

impl fmt::Debug for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VerifierKey({})", self)
    }
}

impl fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut data = vec![ED25519_TYPE];
        data.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{:08x}+{}", self.name, self.key_id(), B64.encode(data))
    }
}

impl VerifierKey {
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let (name, id, data) = split_key(text)?;
        let data = B64.decode(data)?;
        if data.len() != 33 || data[0] != ED25519_TYPE {
            return Err(KeyError::Malformed(
                "verifier key data is not 0x01 || 32-byte key".into(),
            ));
        }
        let public: [u8; 32] = data[1..]
            .try_into()
            .map_err(|_| KeyError::Malformed("key length".into()))?;
        let key = ed25519_dalek::VerifyingKey::from_bytes(&public)
            .map_err(|e| KeyError::Malformed(format!("not an Ed25519 point: {e}")))?;
        let vk = Self {
            name: name.to_owned(),
            key,
        };
        if vk.key_id() != id {
            return Err(KeyError::KeyIdMismatch(text.to_owned()));
        }
        Ok(vk)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn key_id(&self) -> u32 {
        key_id(&self.name, self.key.as_bytes())
    }

    pub fn public_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// Strict RFC 8032 verification (rejects malleable and small-order signatures).
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(sig) = ed25519_dalek::Signature::from_slice(signature) else {
            return false;
        };
        self.key.verify_strict(message, &sig).is_ok() && self.key.verify(message, &sig).is_ok()
    }
}

/// The keys a verifier trusts, looked up by name and key id together.
#[derive(Clone, Debug, Default)]
pub struct VerifierSet {
    keys: Vec<VerifierKey>,
}

impl VerifierSet {
    pub fn new(keys: Vec<VerifierKey>) -> Self {
        Self { keys }
    }

    pub fn find(&self, name: &str, key_id: u32) -> Option<&VerifierKey> {
        self.keys.iter().find(|k| k.name == name && k.key_id() == key_id)
    }

    pub fn keys(&self) -> &[VerifierKey] {
        &self.keys
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_verifier_key_parses_with_its_key_id() {
        let vk = VerifierKey::parse("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k").unwrap();
        assert_eq!(vk.name(), "example.com/foo");
        assert_eq!(vk.key_id(), 0x530d903a);
        assert_eq!(
            vk.to_string(),
            "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
        );
    }

    #[test]
    fn published_signed_note_example_verifies() {
        let vk = VerifierKey::parse("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k").unwrap();
        let sig = B64
            .decode("Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=")
            .unwrap();
        assert_eq!(u32::from_be_bytes(sig[..4].try_into().unwrap()), 0x530d903a);
        assert!(vk.verify(b"This is an example message.\n", &sig[4..]));
        assert!(!vk.verify(b"This is an example message!\n", &sig[4..]));
    }

    #[test]
    fn key_id_mismatch_is_refused() {
        assert!(matches!(
            VerifierKey::parse("example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"),
            Err(KeyError::KeyIdMismatch(_))
        ));
        assert!(matches!(
            VerifierKey::parse("example.com/bar+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"),
            Err(KeyError::KeyIdMismatch(_))
        ));
    }

    #[test]
    fn private_key_round_trips_and_signs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        let k = SigningKey::load_or_generate(&path, "airlock.test/gate").unwrap();
        let again = SigningKey::load_or_generate(&path, "ignored").unwrap();
        assert_eq!(k.to_private_string(), again.to_private_string());
        let sig = k.sign(b"m");
        assert!(k.verifier().verify(b"m", &sig));
        assert!(!k.verifier().verify(b"n", &sig));
        let vk = VerifierKey::parse(&k.verifier().to_string()).unwrap();
        assert_eq!(vk, k.verifier());
        assert!(matches!(SigningKey::generate("bad name"), Err(KeyError::BadName(_))));
    }
}
