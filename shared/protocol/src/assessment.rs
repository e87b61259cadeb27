//! The assessor's rating of a program.

use crate::request::{Language, Origin};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Risk level, ordered: `Low < Medium < High < Blocked`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Low,
    Medium,
    High,
    Blocked,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Low => "LOW",
            Level::Medium => "MEDIUM",
            Level::High => "HIGH",
            Level::Blocked => "BLOCKED",
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_uppercase().as_str() {
            "LOW" => Ok(Level::Low),
            "MEDIUM" => Ok(Level::Medium),
            "HIGH" => Ok(Level::High),
            "BLOCKED" => Ok(Level::Blocked),
            other => Err(format!("unknown level {other:?}")),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

/// What kind of concern a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// A vulnerability pattern of the kind Bandit and Semgrep look for.
    Vulnerability,
    /// Root or admin access, writing system files, privilege escalation.
    PrivilegedAccess,
    /// Behaviour whose purpose is harm: reverse shells, exfiltration, destruction, mining.
    MaliciousIntent,
    /// A match against the operators' threat list.
    KnownThreat,
    /// Something about the input itself (could not be parsed, binary, too large to analyse).
    Input,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// Stable rule id, e.g. `AIR-PY-EXEC-DECODED` or `B602`.
    pub rule_id: String,
    pub category: Category,
    /// The level this finding alone would rate the code.
    pub severity: Level,
    pub confidence: Confidence,
    /// 1-based line of the match.
    pub line: u32,
    /// 1-based column of the match.
    pub column: u32,
    /// The matched source, shortened to one line.
    pub snippet: String,
    /// Why it matters, for a human deciding an override.
    pub explanation: String,
    /// External references: Bandit check ids, CWE ids.
    #[serde(default)]
    pub references: Vec<String>,
}

/// How much of the input the parser understood.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ParseStatus {
    Complete,
    /// Parsed with errors; rules ran on what could be parsed.
    Partial {
        error_count: u32,
        first_error_line: u32,
    },
    /// Not parsed at all (binary, not text, over the analysis limit); rated from what is known.
    Unparsed {
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Assessment {
    pub level: Level,
    pub findings: Vec<Finding>,
    pub parse: ParseStatus,
    /// A short account for a human: what the code tries to do and why it is rated so.
    pub summary: String,
    pub language: Language,
    pub origin: Origin,
    /// Version of the rule set that produced this assessment.
    pub rules_version: String,
    /// Version of the operators' threat list consulted.
    pub threats_version: String,
    pub elapsed_us: u64,
    /// Some or all of the code could not be analysed (not text, not valid UTF-8, NUL bytes, too
    /// large, nested too deep, over the time budget): nobody could tell what it does. The level
    /// already fails closed (BLOCKED for external code, at least HIGH for generated), and the
    /// gate asks a human whatever the level says. Absent on the wire when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unanalysed: bool,
    /// The packages the request names, resolved to exact wheels (dependencies included) and
    /// rated: `level` is already the highest of the code's and theirs. What the request digest
    /// covers and what the executor installs. Absent on the wire when the request names none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<crate::packages::PackageRating>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_upper_case_on_the_wire() {
        assert!(Level::Low < Level::Medium && Level::Medium < Level::High && Level::High < Level::Blocked);
        assert_eq!(serde_json::to_string(&Level::Blocked).unwrap(), "\"BLOCKED\"");
        assert_eq!("medium".parse::<Level>(), Ok(Level::Medium));
    }
}
