//! Packages a request names, resolved to exact wheels and rated before the gate decides.
//!
//! The assessor asks an executor (request-reply on [`RESOLVE_ENDPOINT`]) to resolve a request's
//! specs (`NAME` or `NAME==VERSION`) to wheels, dependencies included; the executor downloads
//! them through the egress proxy, keeps them by SHA-256 and rates every file in them that can
//! run with the assessor's engine. The request's rating is the highest of its own and its
//! packages'; the resolved wheels ([`Wheel`]) are bound into the request digest, and the executor
//! installs exactly those wheels and nothing whose digest differs.

use crate::assessment::{Finding, Level};
use crate::ids::{CodeDigest, RequestId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Request-reply subject on which executors resolve and rate packages (JSON bodies: a
/// [`ResolveRequest`], answered by a [`ResolveReply`]). Only the assessor may ask; any executor
/// may answer (one queue group).
pub const RESOLVE_ENDPOINT: &str = "airlock.executor.packages.resolve";

/// Most wheels one request's packages may resolve to, dependencies included.
pub const MAX_WHEELS: usize = 128;
/// Most findings kept per package (the most severe first); the count says how many there were.
pub const MAX_PACKAGE_FINDINGS: usize = 5;
/// Longest name, version or file name of a wheel accepted.
const MAX_WHEEL_FIELD: usize = 200;

/// One wheel a request's packages resolved to: what decides what the executor installs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Wheel {
    /// The project's name, normalised (PEP 503: lower case, runs of `-_.` as one `-`).
    pub name: String,
    pub version: String,
    /// The wheel's file name (`name-version-python-abi-platform.whl`), as pip needs it.
    pub file: String,
    /// SHA-256 of the wheel's bytes.
    pub sha256: CodeDigest,
}

impl Wheel {
    /// Whether each field is within its bounds and the file name is a wheel's own (nothing a
    /// path or a command line could read otherwise).
    pub fn is_well_formed(&self) -> bool {
        let token = |s: &str, extra: &[u8]| {
            !s.is_empty()
                && s.len() <= MAX_WHEEL_FIELD
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
        };
        token(&self.name, b"-")
            && token(&self.version, b"._+!")
            && token(&self.file, b"._+!-")
            && self.file.ends_with(".whl")
            && !self.file.starts_with('.')
            && !self.file.starts_with('-')
    }
}

/// PEP 503's normalised form of a project name: `Zope.Interface` and `zope_interface` are
/// `zope-interface`.
pub fn normalise_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
            continue;
        }
        if separator && !out.is_empty() {
            out.push('-');
        }
        separator = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A finding in one file of a package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PackageFinding {
    /// The file's path inside the wheel.
    pub file: String,
    pub finding: Finding,
}

/// One resolved package and how its code is rated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PackageRating {
    pub wheel: Wheel,
    /// The highest rating of any file in the wheel that can run.
    pub level: Level,
    /// The most severe findings, at most [`MAX_PACKAGE_FINDINGS`].
    pub findings: Vec<PackageFinding>,
    /// How many findings there were in all.
    pub finding_count: u32,
    /// Files that can run and were read: modules, `.pth` files, scripts.
    pub files_assessed: u32,
    /// Native extension modules and other compiled code that cannot be read.
    pub native_files: u32,
    /// Some code in it could not be analysed (binary where text was expected, too large, over
    /// the time budget): the gate asks a human whatever the level.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unanalysed: bool,
    /// The wheel's digest is on the operators' allow-list (`trusted_wheels`), which lowers what
    /// its native code alone would rate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trusted: bool,
    /// A line for a human: what in it decided the level.
    pub summary: String,
}

/// What the assessor asks an executor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResolveRequest {
    /// The request the packages are for (its fetches are audited under it).
    pub request_id: RequestId,
    /// `NAME` or `NAME==VERSION`, as the request names them.
    pub specs: Vec<String>,
}

/// Why packages could not be resolved and rated. Each ends the request: nothing runs
/// unassessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolveFailure {
    /// A spec is not `NAME` or `NAME==VERSION`, or there are too many.
    InvalidSpec,
    /// The index has no project of that name.
    UnknownPackage,
    /// The project exists but has no wheel of that version for this interpreter (source
    /// distributions are never built: their build code would run unassessed).
    NoWheel,
    /// The index could not be reached (or answered with an error).
    IndexUnreachable,
    /// The egress proxy refused a fetch (a host not allowed).
    EgressRefused,
    /// The wheels are larger than the executor accepts, or too many.
    TooLarge,
    /// Resolving took longer than allowed.
    Timeout,
    /// No executor answered.
    Unavailable,
    /// Anything else on the executor's side.
    Internal,
}

impl ResolveFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            ResolveFailure::InvalidSpec => "invalid_spec",
            ResolveFailure::UnknownPackage => "unknown_package",
            ResolveFailure::NoWheel => "no_wheel",
            ResolveFailure::IndexUnreachable => "index_unreachable",
            ResolveFailure::EgressRefused => "egress_refused",
            ResolveFailure::TooLarge => "too_large",
            ResolveFailure::Timeout => "timeout",
            ResolveFailure::Unavailable => "unavailable",
            ResolveFailure::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ResolveFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The executor's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ResolveReply {
    Resolved {
        /// One per wheel, dependencies included, sorted by name.
        packages: Vec<PackageRating>,
        /// The rules and threat list the executor's engine rated them with.
        rules_version: String,
        threats_version: String,
        /// The specs' resolution was reused from an earlier one (within its time to live).
        resolution_cached: bool,
        elapsed_ms: u64,
    },
    Failed {
        failure: ResolveFailure,
        detail: String,
    },
}

/// The wheels of rated packages, sorted: what the request digest covers.
pub fn wheels_of(packages: &[PackageRating]) -> Vec<Wheel> {
    let mut wheels: Vec<Wheel> = packages.iter().map(|p| p.wheel.clone()).collect();
    wheels.sort();
    wheels.dedup();
    wheels
}

/// Whether rated packages answer every spec a request names: each spec's project is among
/// them, at the version it pins. Mai's specs are checked, not trusted: an answer that leaves one
/// out would let the program run without it (at best) or with something else.
pub fn covers(specs: &[String], packages: &[PackageRating]) -> Result<(), String> {
    for spec in specs {
        let (name, version) = spec.split_once("==").unwrap_or((spec, ""));
        let name = normalise_name(name);
        let found = packages
            .iter()
            .any(|p| p.wheel.name == name && (version.is_empty() || p.wheel.version == version));
        if !found {
            return Err(format!("no wheel resolved for {spec:?}"));
        }
    }
    if packages.len() > MAX_WHEELS {
        return Err(format!("{} wheels; at most {MAX_WHEELS} are accepted", packages.len()));
    }
    if let Some(bad) = packages.iter().find(|p| !p.wheel.is_well_formed()) {
        return Err(format!(
            "a resolved wheel is malformed: {:?}",
            crate::text::clip(&bad.wheel.file, 120)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rating(name: &str, version: &str) -> PackageRating {
        let file = format!("{}-{version}-py3-none-any.whl", name.replace('-', "_"));
        PackageRating {
            wheel: Wheel {
                name: name.into(),
                version: version.into(),
                sha256: CodeDigest::of(file.as_bytes()),
                file,
            },
            level: Level::Low,
            findings: vec![],
            finding_count: 0,
            files_assessed: 1,
            native_files: 0,
            unanalysed: false,
            trusted: false,
            summary: String::new(),
        }
    }

    #[test]
    fn names_are_normalised_as_pep_503_says() {
        assert_eq!(normalise_name("Zope.Interface"), "zope-interface");
        assert_eq!(normalise_name("zope__interface"), "zope-interface");
        assert_eq!(normalise_name("tablefmt_rt"), "tablefmt-rt");
        assert_eq!(normalise_name("six"), "six");
    }

    #[test]
    fn every_spec_must_be_answered_at_its_version() {
        let packages = vec![rating("tablefmt-rt", "1.0"), rating("six", "1.16.0")];
        assert_eq!(covers(&["tablefmt_rt==1.0".into(), "Six".into()], &packages), Ok(()));
        assert!(covers(&["tablefmt-rt==2.0".into()], &packages).is_err());
        assert!(covers(&["requests".into()], &packages).is_err());
        let mut bad = packages.clone();
        bad[0].wheel.file = "../../etc/passwd.whl".into();
        assert!(covers(&[], &bad).is_err());
        bad[0].wheel.file = "--index-url=x.whl".into();
        assert!(covers(&[], &bad).is_err());
    }
}
