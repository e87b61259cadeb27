//! Which keys a verifier trusts, and when: key rotation is done by overlapping signatures (old
//! and new key both sign checkpoints during a window), and each verifier key carries the window
//! in which its signatures count.

use airlock_protocol::{KeyError, VerifierKey};
use serde::{Deserialize, Serialize};

/// A verifier key as configured: `name+keyid+base64`, with an optional validity window in Unix
/// milliseconds. A checkpoint's time is the `time_ms` of its last entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyConfig {
    pub key: String,
    #[serde(default)]
    pub not_before_ms: Option<i64>,
    #[serde(default)]
    pub not_after_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedKey {
    pub key: VerifierKey,
    pub not_before_ms: Option<i64>,
    pub not_after_ms: Option<i64>,
}

impl TrustedKey {
    pub fn always(key: VerifierKey) -> Self {
        Self {
            key,
            not_before_ms: None,
            not_after_ms: None,
        }
    }

    pub fn from_config(config: &KeyConfig) -> Result<Self, KeyError> {
        Ok(Self {
            key: VerifierKey::parse(&config.key)?,
            not_before_ms: config.not_before_ms,
            not_after_ms: config.not_after_ms,
        })
    }

    pub fn valid_at(&self, time_ms: i64) -> bool {
        self.not_before_ms.is_none_or(|t| time_ms >= t) && self.not_after_ms.is_none_or(|t| time_ms <= t)
    }
}
