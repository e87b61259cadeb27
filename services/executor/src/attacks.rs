//! The attack suite's expectations, as data (`tests/attacks/attacks.toml`), so the sandbox's
//! own test and the whole-pipeline test check the same containment.

use crate::config::Quotas;
use airlock_protocol::{Inputs, Language, Limits, Runtime, TrustLevel, ViolationKind};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Marks output that proves an attack got through.
pub const ESCAPED: &str = "ESCAPED";

#[derive(Clone, Debug, Deserialize)]
pub struct Manifest {
    pub attack: Vec<Attack>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attack {
    pub name: String,
    pub file: String,
    #[serde(default = "untrusted")]
    pub quota: TrustLevel,
    #[serde(default)]
    pub limits: LimitOverrides,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub arg_bytes: usize,
    #[serde(default)]
    pub env_bytes: usize,
    #[serde(default)]
    pub stdin: String,
    pub expect: Expect,
    /// Under gVisor, where what the attack reports legitimately differs from runc (gVisor's
    /// own kernel answers in its own words): the expectation there, and why it differs.
    pub runsc: Option<RuntimeExpect>,
}

/// An attack's expectation under one runtime, replacing `expect` there.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeExpect {
    /// Why the containment reads differently under this runtime (required, never empty).
    pub why: String,
    pub expect: Expect,
}

fn untrusted() -> TrustLevel {
    TrustLevel::Untrusted
}

/// Lower values for some limits of the quota (to keep the suite short).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitOverrides {
    pub wall_ms: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub output_bytes: Option<u64>,
    pub pids: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The violation that must be reported; absent: none may be.
    pub violation: Option<ViolationKind>,
    /// Violations that are as true an end as `violation` where two limits race (under gVisor a
    /// fork bomb meets the memory limit or the pids limit first, as the host's load falls).
    #[serde(default)]
    pub or_violation: Vec<ViolationKind>,
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub stdout_contains: Vec<String>,
    #[serde(default)]
    pub stdout_lacks: Vec<String>,
    #[serde(default)]
    pub stderr_contains: Vec<String>,
    pub output_at_most: Option<u64>,
    /// Words the terminal event's reason must hold (why the run ended as it did).
    #[serde(default)]
    pub reason_contains: Vec<String>,
}

impl Manifest {
    /// Reads `attacks.toml` in `dir`.
    pub fn load(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join("attacks.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The suite's directory in this repository.
    pub fn repo_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/attacks")
    }
}

impl Attack {
    /// The containment that must hold when the attack runs under `runtime`.
    pub fn expect_under(&self, runtime: Runtime) -> &Expect {
        match (runtime, &self.runsc) {
            (Runtime::Runsc, Some(under)) => &under.expect,
            _ => &self.expect,
        }
    }

    pub fn language(&self) -> Result<Language, String> {
        Language::detect(&self.file, b"").ok_or_else(|| format!("{}: no language for this extension", self.file))
    }

    pub fn code(&self, dir: &Path) -> Result<Vec<u8>, String> {
        std::fs::read(dir.join(&self.file)).map_err(|e| format!("{}: {e}", self.file))
    }

    pub fn inputs(&self) -> Inputs {
        let mut args = self.args.clone();
        if self.arg_bytes > 0 {
            args.push("A".repeat(self.arg_bytes));
        }
        let mut env = std::collections::BTreeMap::new();
        if self.env_bytes > 0 {
            env.insert("AIRLOCK_BIG_ENV".to_owned(), "B".repeat(self.env_bytes));
        }
        Inputs {
            args,
            env,
            stdin: self.stdin.as_bytes().to_vec(),
            files: vec![],
        }
    }

    /// The quota's limits with the overrides applied (never above the quota).
    pub fn limits(&self, quotas: &Quotas) -> Limits {
        let quota = quotas.for_level(self.quota);
        let o = &self.limits;
        let lowered = Limits {
            wall_ms: o.wall_ms.unwrap_or(quota.wall_ms),
            memory_bytes: o.memory_bytes.unwrap_or(quota.memory_bytes),
            output_bytes: o.output_bytes.unwrap_or(quota.output_bytes),
            pids: o.pids.unwrap_or(quota.pids),
            ..quota
        };
        lowered.min(&quota)
    }
}

impl Expect {
    /// Whether a result shows the expected containment; the error says what did not hold.
    pub fn check(
        &self,
        exit_code: Option<i64>,
        stdout: &[u8],
        stderr: &[u8],
        violation: Option<ViolationKind>,
        reason: &str,
    ) -> Result<(), String> {
        let out = String::from_utf8_lossy(stdout);
        let err = String::from_utf8_lossy(stderr);
        let mut problems = Vec::new();
        if out.contains(ESCAPED) || err.contains(ESCAPED) {
            problems.push("the output says ESCAPED".to_owned());
        }
        if violation != self.violation && !violation.is_some_and(|v| self.or_violation.contains(&v)) {
            let or = if self.or_violation.is_empty() {
                String::new()
            } else {
                format!(" or one of {:?}", self.or_violation)
            };
            problems.push(format!("violation {violation:?}, expected {:?}{or}", self.violation));
        }
        if let Some(code) = self.exit_code
            && exit_code != Some(code)
        {
            problems.push(format!("exit code {exit_code:?}, expected {code}"));
        }
        for needle in &self.stdout_contains {
            if !out.contains(needle.as_str()) {
                problems.push(format!("stdout lacks {needle:?}"));
            }
        }
        for needle in &self.stderr_contains {
            if !err.contains(needle.as_str()) {
                problems.push(format!("stderr lacks {needle:?}"));
            }
        }
        for needle in &self.reason_contains {
            if !reason.contains(needle.as_str()) {
                problems.push(format!("the reason {reason:?} lacks {needle:?}"));
            }
        }
        for needle in &self.stdout_lacks {
            if out.contains(needle.as_str()) {
                problems.push(format!("stdout contains {needle:?}"));
            }
        }
        if let Some(max) = self.output_at_most
            && (stdout.len() + stderr.len()) as u64 > max
        {
            problems.push(format!(
                "{} bytes of output, at most {max} allowed",
                stdout.len() + stderr.len()
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            let tail = |s: &str| {
                s.chars()
                    .rev()
                    .take(600)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<String>()
            };
            Err(format!(
                "{}\n--- stdout (end) ---\n{}\n--- stderr (end) ---\n{}",
                problems.join("; "),
                tail(&out),
                tail(&err)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_parses_and_every_file_exists() {
        let dir = Manifest::repo_dir();
        let manifest = Manifest::load(&dir).unwrap();
        assert!(manifest.attack.len() >= 20);
        for attack in &manifest.attack {
            attack.language().unwrap();
            assert!(!attack.code(&dir).unwrap().is_empty(), "{}", attack.name);
            assert!(
                attack
                    .limits(&Quotas::default())
                    .within(&Quotas::default().for_level(attack.quota))
            );
            if let Some(under) = &attack.runsc {
                assert!(
                    under.why.trim().len() >= 20,
                    "{}: a runsc expectation says why it differs",
                    attack.name
                );
            }
        }
    }

    #[test]
    fn a_runsc_expectation_applies_under_runsc_only() {
        let attack: Attack = toml::from_str(
            r#"
            name = "n"
            file = "f.py"
            expect = { exit_code = 0 }
            runsc = { why = "gVisor reports it otherwise", expect = { exit_code = 1 } }
            "#,
        )
        .unwrap();
        assert_eq!(attack.expect_under(Runtime::Runc).exit_code, Some(0));
        assert_eq!(attack.expect_under(Runtime::Runsc).exit_code, Some(1));
        let without_why = toml::from_str::<Attack>(
            r#"
            name = "n"
            file = "f.py"
            expect = { exit_code = 0 }
            runsc = { expect = { exit_code = 1 } }
            "#,
        );
        assert!(without_why.is_err(), "a runsc expectation needs its reason");
    }

    #[test]
    fn expectations_can_fail() {
        let expect = Expect {
            violation: Some(ViolationKind::Pids),
            stdout_contains: vec!["CONTAINED".into()],
            ..Default::default()
        };
        assert!(
            expect
                .check(None, b"CONTAINED x", b"", Some(ViolationKind::Pids), "")
                .is_ok()
        );
        assert!(expect.check(None, b"CONTAINED x", b"", None, "").is_err());
        assert!(
            expect
                .check(None, b"CONTAINED ESCAPED", b"", Some(ViolationKind::Pids), "")
                .is_err()
        );
        assert!(
            expect
                .check(None, b"nothing", b"", Some(ViolationKind::Pids), "")
                .is_err()
        );
        let interrupted = Expect {
            reason_contains: vec!["interrupted".into()],
            ..Default::default()
        };
        assert!(
            interrupted
                .check(None, b"", b"", None, "interrupted: status 137")
                .is_ok()
        );
        assert!(interrupted.check(None, b"", b"", None, "finished").is_err());
    }
}
