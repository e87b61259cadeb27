//! Which keys a verifier trusts, and when. A rotation (`airlock keys rotate`) keeps the old
//! key as a verifier of what it signed and records when it was retired: its signatures count
//! for what was logged up to then. The keys of one signer across rotations are a [`KeySet`]
//! file; configured verifier keys may carry a window of their own ([`KeyConfig`]).

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

impl TrustedKey {
    /// Whether this key may have signed a checkpoint covering an entry appended at `time_ms`:
    /// not when it was retired before then. (A checkpoint is at least as late as every entry
    /// it covers, so only the end of a key's window can be judged from one entry.)
    pub fn could_cover(&self, time_ms: i64) -> bool {
        self.not_after_ms.is_none_or(|t| time_ms <= t)
    }
}

/// Why a key set file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeySetError {
    #[error("reading {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("writing {path}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("line {line}: {detail}")]
    Line { line: usize, detail: String },
    #[error("line {line}: the key")]
    Key {
        line: usize,
        #[source]
        source: KeyError,
    },
}

/// One key of a set: the verifier key, when it was made, and when it stopped signing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySetEntry {
    pub key: VerifierKey,
    /// When the key was made (Unix ms): for people reading the set, not a bound.
    pub created_ms: Option<i64>,
    /// When the key stopped signing (Unix ms): its signatures count only for what was logged
    /// (signed) up to then. `None` for the key in use.
    pub retired_ms: Option<i64>,
}

/// The verifier keys of one signer across rotations (`keys/auditor.keys`, `keys/gate.keys`,
/// `keys/bridge.keys`), newest first, as written by `airlock keys rotate`. One key per line:
///
/// ```text
/// # comments and blank lines are ignored
/// airlock.local/audit+73009e41+Ab...= created=2026-11-27T12:00:00.123Z
/// airlock.local/audit+e1bb6504+AY...= created=2026-11-20T10:00:00.000Z retired=2026-11-27T12:00:01.456Z
/// ```
///
/// Times are RFC 3339 in UTC. Any other attribute is refused: a misspelt `retired` must not
/// leave a retired key trusted without end. Readers: `airlock audit`, the auditor, the Rust
/// client and the Python client (`clients/python/src/airlock_client/home.py`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeySet {
    pub entries: Vec<KeySetEntry>,
}

impl KeySet {
    pub fn parse(text: &str) -> Result<KeySet, KeySetError> {
        let mut entries = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = raw.trim();
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            let mut words = content.split_whitespace();
            let key_text = words.next().unwrap_or_default();
            let key = VerifierKey::parse(key_text).map_err(|source| KeySetError::Key { line, source })?;
            let mut entry = KeySetEntry {
                key,
                created_ms: None,
                retired_ms: None,
            };
            for word in words {
                let bad = |detail: String| KeySetError::Line { line, detail };
                let (name, value) = word
                    .split_once('=')
                    .ok_or_else(|| bad(format!("{word:?} is not name=time")))?;
                let time = parse_time(value).ok_or_else(|| bad(format!("{name}={value:?} is not an RFC 3339 time")))?;
                match name {
                    "created" => entry.created_ms = Some(time),
                    "retired" => entry.retired_ms = Some(time),
                    other => return Err(bad(format!("unknown attribute {other:?} (created, retired)"))),
                }
            }
            if entries.iter().any(|e: &KeySetEntry| e.key == entry.key) {
                return Err(KeySetError::Line {
                    line,
                    detail: format!("{} is listed twice", entry.key),
                });
            }
            entries.push(entry);
        }
        Ok(KeySet { entries })
    }

    /// The set in its file format, under a comment saying what it is.
    pub fn to_text(&self, what: &str) -> String {
        let mut out = format!(
            "# {what}, newest first (written by `airlock keys rotate`).\n\
             # A retired key's signatures count only for what was signed up to its retirement.\n"
        );
        for entry in &self.entries {
            out.push_str(&entry.key.to_string());
            if let Some(t) = entry.created_ms {
                out.push_str(&format!(" created={}", format_time(t)));
            }
            if let Some(t) = entry.retired_ms {
                out.push_str(&format!(" retired={}", format_time(t)));
            }
            out.push('\n');
        }
        out
    }

    /// The set in `path`, or `None` when there is no such file.
    pub fn load(path: &std::path::Path) -> Result<Option<KeySet>, KeySetError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(KeySet::parse(&text)?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(KeySetError::Read {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Writes the set to `path` whole or not at all (a new file renamed over the old).
    pub fn save(&self, path: &std::path::Path, what: &str) -> Result<(), KeySetError> {
        let error = |source| KeySetError::Write {
            path: path.display().to_string(),
            source,
        };
        let temporary = path.with_extension("keys.tmp");
        std::fs::write(&temporary, self.to_text(what)).map_err(error)?;
        std::fs::rename(&temporary, path).map_err(error)
    }

    /// The keys as a verifier trusts them: each retired key only up to its retirement.
    pub fn trusted(&self) -> Vec<TrustedKey> {
        self.entries
            .iter()
            .map(|e| TrustedKey {
                key: e.key.clone(),
                not_before_ms: None,
                not_after_ms: e.retired_ms,
            })
            .collect()
    }

    /// The key in use: the newest one not retired.
    pub fn current(&self) -> Option<&KeySetEntry> {
        self.entries.iter().find(|e| e.retired_ms.is_none())
    }

    pub fn get(&self, key: &VerifierKey) -> Option<&KeySetEntry> {
        self.entries.iter().find(|e| &e.key == key)
    }

    /// Puts `key` first, as the key in use (kept where it is if listed already).
    pub fn add_current(&mut self, key: VerifierKey, created_ms: i64) {
        if self.get(&key).is_none() {
            self.entries.insert(
                0,
                KeySetEntry {
                    key,
                    created_ms: Some(created_ms),
                    retired_ms: None,
                },
            );
        }
    }

    /// Lists `key` (the key in use until now) if it is not listed, with no date.
    pub fn keep(&mut self, key: VerifierKey) {
        if self.get(&key).is_none() {
            self.entries.push(KeySetEntry {
                key,
                created_ms: None,
                retired_ms: None,
            });
        }
    }

    /// Marks `key` retired at `at_ms` (a later retirement of an already retired key is kept).
    pub fn retire(&mut self, key: &VerifierKey, at_ms: i64) {
        for entry in self.entries.iter_mut().filter(|e| &e.key == key) {
            entry.retired_ms = Some(entry.retired_ms.map_or(at_ms, |t| t.max(at_ms)));
        }
    }
}

fn parse_time(text: &str) -> Option<i64> {
    let time = humantime::parse_rfc3339(text).ok()?;
    let since = time.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

/// An RFC 3339 UTC time with milliseconds.
pub fn format_time(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::SigningKey;

    #[test]
    fn a_key_set_round_trips_and_its_retired_keys_count_only_until_retired() {
        let old = SigningKey::from_seed("airlock.test/audit", [1; 32]).unwrap().verifier();
        let new = SigningKey::from_seed("airlock.test/audit", [2; 32]).unwrap().verifier();
        let mut set = KeySet::default();
        set.keep(old.clone());
        set.add_current(new.clone(), 1_764_244_800_123);
        set.retire(&old, 1_764_244_801_456);
        let text = set.to_text("Verifier keys of airlock.test/audit");
        assert!(text.contains("created=2025-11-27T12:00:00.123Z"), "{text}");
        assert!(text.contains("retired=2025-11-27T12:00:01.456Z"), "{text}");
        let parsed = KeySet::parse(&text).unwrap();
        assert_eq!(parsed, set);
        assert_eq!(parsed.current().map(|e| &e.key), Some(&new));
        let trusted = parsed.trusted();
        let old_trusted = trusted.iter().find(|k| k.key == old).unwrap();
        assert!(old_trusted.could_cover(1_764_244_801_456));
        assert!(!old_trusted.could_cover(1_764_244_801_457));
        assert!(trusted.iter().find(|k| k.key == new).unwrap().could_cover(i64::MAX));
    }

    #[test]
    fn a_misspelt_or_repeated_line_is_refused_with_its_number() {
        let key = SigningKey::from_seed("airlock.test/audit", [1; 32]).unwrap().verifier();
        for (text, line) in [
            (format!("# set\n{key} retierd=2026-01-01T00:00:00Z\n"), 2),
            (format!("{key} retired=yesterday\n"), 1),
            (format!("{key}\n\n{key}\n"), 3),
            ("not-a-key\n".to_owned(), 1),
        ] {
            let error = KeySet::parse(&text).unwrap_err();
            assert!(error.to_string().starts_with(&format!("line {line}")), "{error}");
        }
    }
}
