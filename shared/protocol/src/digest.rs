//! The execution digest: one SHA-256 over everything that decides what runs.
//!
//! Airlock's promise is a chain: this exact thing was assessed, approved by these people, ran,
//! and the log proves it. Each joint of the chain names the same digest: the assessor rates the
//! request whose [`request_digest`] it publishes, the approver is shown what the digest covers,
//! the gate signs the [`execution_digest`] (the request digest with what the approval grants),
//! the executor recomputes it from what it was handed and runs nothing that differs, an approval
//! remembered for "this exact code again" is keyed on it, and the audit log records it.
//!
//! The canonical form is MessagePack with named fields, in the order the structs below declare
//! them (maps sorted by key), hashed with SHA-256: deterministic, and readable by any MessagePack
//! library. `docs/clients.md` describes it field by field and `schemas/vectors/` holds an
//! example with its digest, which a test here recomputes.

use crate::decision::Limits;
use crate::ids::CodeDigest;
use crate::packages::Wheel;
use crate::request::{ExecutionRequest, Language, TrustLevel};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Domain of the request digest (everything the request itself decides).
pub const REQUEST_DIGEST_DOMAIN: &str = "airlock/request/v1";
/// Domain of the execution digest (the request digest and the grant).
pub const EXECUTION_DIGEST_DOMAIN: &str = "airlock/execution/v1";

/// The container runtime a run is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    /// runc with Airlock's own seccomp profile: the host's kernel, hardened.
    #[default]
    Runc,
    /// gVisor: a second kernel between the program and the host's.
    Runsc,
}

impl Runtime {
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Runc => "runc",
            Runtime::Runsc => "runsc",
        }
    }
}

impl std::str::FromStr for Runtime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "runc" => Ok(Runtime::Runc),
            "runsc" | "gvisor" => Ok(Runtime::Runsc),
            other => Err(format!("unknown runtime {other:?} (runc or runsc)")),
        }
    }
}

/// What network a program may reach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// No network at all.
    #[default]
    None,
    /// GET and HEAD to allow-listed hosts through Airlock's egress proxy.
    ReadOnly,
}

impl NetworkMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::None => "none",
            NetworkMode::ReadOnly => "read-only",
        }
    }

    pub fn is_none(&self) -> bool {
        *self == NetworkMode::None
    }
}

impl std::str::FromStr for NetworkMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(NetworkMode::None),
            "read-only" | "read_only" => Ok(NetworkMode::ReadOnly),
            other => Err(format!("unknown network mode {other:?} (none or read-only)")),
        }
    }
}

/// What an approval grants besides the right to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Grant {
    pub quota: TrustLevel,
    pub limits: Limits,
    #[serde(default)]
    pub runtime: Runtime,
    #[serde(default)]
    pub network: NetworkMode,
    /// With `network = "read-only"`, exactly the hosts the program may fetch from (entries as
    /// in `[executor.egress] read_only_hosts`, which they must stay within): the list the
    /// approver was shown, narrowed by the policy for the code's origin. Signed with the rest,
    /// so that what the executor's proxy allows is what was approved. Empty without network
    /// (and left out of the digest's form then, so grants without network keep their digests).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub read_only_hosts: Vec<String>,
}

/// The interpreter the executor starts for a language: part of what is approved.
pub fn interpreter(language: Language) -> &'static str {
    match language {
        Language::Python => "python3",
        Language::Bash => "bash",
    }
}

/// The request digest's canonical form.
#[derive(Serialize)]
struct RequestForm<'a> {
    domain: &'static str,
    /// The client user that submitted (the request id's client part; empty when it has none).
    client: &'a str,
    language: Language,
    interpreter: &'static str,
    /// SHA-256 of the code's bytes, exactly as submitted (the interpreter decodes them; a
    /// declared encoding is part of the bytes).
    code: CodeDigest,
    args: &'a [String],
    env: &'a BTreeMap<String, String>,
    /// SHA-256 of the bytes on standard input.
    stdin: CodeDigest,
    /// The wheels the request's packages resolved to (dependencies included), sorted: what is
    /// installed, not the specs that named it (a new release changes what a name resolves to).
    packages: &'a [Wheel],
    network: NetworkMode,
    /// The files given to the program, by name and SHA-256, in the request's order. Left out
    /// of the form when there are none, so that digests of requests without files (and the
    /// approvals remembered under them) are those of before files existed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    files: Vec<(&'a str, CodeDigest)>,
}

/// The execution digest's canonical form.
#[derive(Serialize)]
struct ExecutionForm<'a> {
    domain: &'static str,
    request: &'a CodeDigest,
    grant: &'a Grant,
}

fn digest_of(form: &impl Serialize) -> CodeDigest {
    // Encoding plain structs, strings and maps into a Vec cannot fail.
    let bytes = rmp_serde::to_vec_named(form).unwrap_or_default();
    CodeDigest::of(&bytes)
}

/// The digest of everything the request decides about what runs, for the request of `client`
/// whose packages resolved to `wheels`: what the assessor rates.
pub fn request_digest(request: &ExecutionRequest, client: Option<&str>, wheels: &[Wheel]) -> CodeDigest {
    let mut wheels = wheels.to_vec();
    wheels.sort();
    wheels.dedup();
    digest_of(&RequestForm {
        domain: REQUEST_DIGEST_DOMAIN,
        client: client.unwrap_or_default(),
        language: request.language,
        interpreter: interpreter(request.language),
        code: CodeDigest::of(&request.code),
        args: &request.inputs.args,
        env: &request.inputs.env,
        stdin: CodeDigest::of(&request.inputs.stdin),
        packages: &wheels,
        network: request.network,
        files: request
            .inputs
            .files
            .iter()
            .map(|f| (f.name.as_str(), CodeDigest::of(&f.content)))
            .collect(),
    })
}

/// The digest of a request (its [`request_digest`]) run with `grant`: what the gate signs, the
/// executor checks, and an approval remembered is keyed on.
pub fn execution_digest(request_digest: &CodeDigest, grant: &Grant) -> CodeDigest {
    digest_of(&ExecutionForm {
        domain: EXECUTION_DIGEST_DOMAIN,
        request: request_digest,
        grant,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Quotas;
    use crate::request::Origin;

    fn grant() -> Grant {
        Grant {
            quota: TrustLevel::Untrusted,
            limits: Quotas::default().untrusted,
            runtime: Runtime::Runc,
            network: NetworkMode::None,
            read_only_hosts: vec![],
        }
    }

    fn wheel(name: &str, version: &str, bytes: &[u8]) -> Wheel {
        Wheel {
            name: name.into(),
            version: version.into(),
            file: format!("{}-{version}-py3-none-any.whl", name.replace('-', "_")),
            sha256: CodeDigest::of(bytes),
        }
    }

    #[test]
    fn every_part_that_decides_what_runs_changes_the_digest() {
        let base = ExecutionRequest::new(Language::Python, "print(1)\n");
        let six = vec![wheel("six", "1.16.0", b"six wheel")];
        let digest = |r: &ExecutionRequest, client: Option<&str>, wheels: &[Wheel], g: &Grant| {
            execution_digest(&request_digest(r, client, wheels), g)
        };
        let original = digest(&base, Some("mai"), &six, &grant());
        let mut changes: Vec<(&str, CodeDigest)> = Vec::new();
        let mut r = base.clone();
        r.code = b"print(2)\n".to_vec();
        changes.push(("code", digest(&r, Some("mai"), &six, &grant())));
        let mut r = base.clone();
        r.language = Language::Bash;
        changes.push(("language", digest(&r, Some("mai"), &six, &grant())));
        let mut r = base.clone();
        r.inputs.args.push("x".into());
        changes.push(("args", digest(&r, Some("mai"), &six, &grant())));
        let mut r = base.clone();
        r.inputs.env.insert("A".into(), "1".into());
        changes.push(("env", digest(&r, Some("mai"), &six, &grant())));
        let mut r = base.clone();
        r.inputs.stdin = b"y".to_vec();
        changes.push(("stdin", digest(&r, Some("mai"), &six, &grant())));
        let mut with_file = base.clone();
        with_file
            .inputs
            .files
            .push(crate::files::InputFile::new("data.csv", "a,b\n"));
        changes.push(("a file", digest(&with_file, Some("mai"), &six, &grant())));
        let mut r = with_file.clone();
        r.inputs.files[0].content = b"a,c\n".to_vec();
        changes.push(("a file's content", digest(&r, Some("mai"), &six, &grant())));
        let mut r = with_file.clone();
        r.inputs.files[0].name = "data2.csv".into();
        changes.push(("a file's name", digest(&r, Some("mai"), &six, &grant())));
        changes.push(("no packages", digest(&base, Some("mai"), &[], &grant())));
        let mut more = six.clone();
        more.push(wheel("tablefmt-rt", "1.0", b"a wheel"));
        changes.push(("another package", digest(&base, Some("mai"), &more, &grant())));
        changes.push((
            "a wheel's bytes (a release swapped on the index)",
            digest(&base, Some("mai"), &[wheel("six", "1.16.0", b"other bytes")], &grant()),
        ));
        changes.push((
            "a wheel's version",
            digest(&base, Some("mai"), &[wheel("six", "1.17.0", b"six wheel")], &grant()),
        ));
        let mut renamed = six.clone();
        renamed[0].file = "six-1.16.0-py2.py3-none-any.whl".into();
        changes.push(("a wheel's file name", digest(&base, Some("mai"), &renamed, &grant())));
        let mut r = base.clone();
        r.network = NetworkMode::ReadOnly;
        changes.push(("network asked", digest(&r, Some("mai"), &six, &grant())));
        changes.push(("client", digest(&base, Some("bob"), &six, &grant())));
        let mut g = grant();
        g.quota = TrustLevel::Trusted;
        changes.push(("quota", digest(&base, Some("mai"), &six, &g)));
        let mut g = grant();
        g.limits.wall_ms += 1;
        changes.push(("limits", digest(&base, Some("mai"), &six, &g)));
        let mut g = grant();
        g.runtime = Runtime::Runsc;
        changes.push(("runtime", digest(&base, Some("mai"), &six, &g)));
        let mut g = grant();
        g.network = NetworkMode::ReadOnly;
        changes.push(("network granted", digest(&base, Some("mai"), &six, &g)));
        // The hosts a read-only grant names are bound like the rest: one host more or less is
        // another execution.
        let hosts = |list: &[&str]| {
            let mut g = grant();
            g.network = NetworkMode::ReadOnly;
            g.read_only_hosts = list.iter().map(|h| (*h).to_owned()).collect();
            digest(&base, Some("mai"), &six, &g)
        };
        assert_ne!(hosts(&["pypi.org"]), hosts(&["pypi.org", "docs.python.org"]));
        assert_ne!(hosts(&["pypi.org"]), hosts(&["docs.python.org"]));
        for (what, changed) in &changes {
            assert_ne!(changed, &original, "changing the {what} must change the digest");
        }
        // What does not decide what runs does not change it: the label, the origin, the
        // deadline, the specs that named the wheels, the order the wheels are listed in.
        let mut r = base.clone();
        r.label = Some("a label".into());
        r.origin = Origin::External;
        r.deadline_ms = Some(1);
        r.packages = vec!["Six".into()];
        assert_eq!(digest(&r, Some("mai"), &six, &grant()), original);
        let mut reversed = more.clone();
        reversed.reverse();
        assert_eq!(
            digest(&base, Some("mai"), &reversed, &grant()),
            digest(&base, Some("mai"), &more, &grant())
        );
    }

    #[test]
    fn the_published_vector_holds() {
        // schemas/vectors/execution-digest.json: other languages check their encoding with it.
        let text = include_str!("../../../schemas/vectors/execution-digest.json");
        let vector: serde_json::Value = serde_json::from_str(text).expect("vector");
        let request: ExecutionRequest = serde_json::from_value(vector["request"].clone()).expect("request");
        let grant: Grant = serde_json::from_value(vector["grant"].clone()).expect("grant");
        let client = vector["client"].as_str();
        let wheels: Vec<Wheel> = serde_json::from_value(vector["wheels"].clone()).expect("wheels");
        assert!(!wheels.is_empty(), "the vector resolves packages");
        let request_digest = request_digest(&request, client, &wheels);
        assert_eq!(
            request_digest.as_str(),
            vector["request_digest"].as_str().expect("request_digest")
        );
        assert_eq!(
            execution_digest(&request_digest, &grant).as_str(),
            vector["execution_digest"].as_str().expect("execution_digest")
        );
        let read_only: Grant = serde_json::from_value(vector["read_only_grant"].clone()).expect("read_only_grant");
        assert_eq!(read_only.read_only_hosts, ["pypi.org", "*.example.org"]);
        assert_eq!(
            execution_digest(&request_digest, &read_only).as_str(),
            vector["read_only_execution_digest"]
                .as_str()
                .expect("read_only_execution_digest")
        );
    }
}
