//! What Mai submits.

use crate::digest::NetworkMode;
use crate::ids::{CodeDigest, RequestId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Largest program the pipeline accepts. Larger submissions are refused before assessment.
pub const MAX_CODE_BYTES: usize = 512 * 1024;
/// Largest total of arguments, environment and stdin.
pub const MAX_INPUT_BYTES: usize = 256 * 1024;
pub const MAX_PACKAGES: usize = 32;
pub const MAX_ARGS: usize = 256;
pub const MAX_ENV_VARS: usize = 128;
pub const MAX_ENV_NAME_BYTES: usize = 128;
/// Labels are shown to humans on one line.
pub const MAX_LABEL_CHARS: usize = 256;

/// Environment variables that change how an interpreter or the dynamic loader starts: with
/// them, code runs before (or instead of) the program that was assessed — `BASH_ENV` is read
/// and run by bash before the script, `PS4` is expanded (command substitutions included) by
/// `SHELLOPTS=xtrace`, `PYTHONSTARTUP`/`PYTHONPATH` load modules, `LD_PRELOAD` loads a library
/// into every process. They are refused outright rather than assessed.
const FORBIDDEN_ENV: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "CDPATH",
    "GLOBIGNORE",
    "EXECIGNORE",
    "BASH_XTRACEFD",
    "BASH_LOADABLES_PATH",
    "INPUTRC",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    "LOCPATH",
    "NLSPATH",
    "RESOLV_HOST_CONF",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_CONFIG_GLOBAL",
    "LOCALDOMAIN",
    "RES_OPTIONS",
];
/// Prefixes of the same: the loader's `LD_*` (and macOS's `DYLD_*`), glibc's `MALLOC_*`,
/// bash's exported functions.
const FORBIDDEN_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_", "MALLOC_", "BASH_FUNC_"];
/// `PYTHON*` variables are refused but for these, which only change encodings and buffering.
const ALLOWED_PYTHON_ENV: &[&str] = &[
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONHASHSEED",
    "PYTHONDONTWRITEBYTECODE",
];

/// Whether a request may set environment variable `name` (case as given: the names above are
/// upper case, and a lower-case `ld_preload` is not read by the loader).
pub fn env_name_allowed(name: &str) -> bool {
    !changes_how_code_starts(name)
}

/// Whether environment variable `name` makes an interpreter or the loader run or load code
/// before (or instead of) the program: the one list, which validation refuses and the assessor
/// rates as code if it ever meets one.
pub fn changes_how_code_starts(name: &str) -> bool {
    FORBIDDEN_ENV.contains(&name)
        || FORBIDDEN_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("PYTHON") && !ALLOWED_PYTHON_ENV.contains(&name))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    Python,
    Bash,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Bash => "bash",
        }
    }

    /// Guesses the language from a file name and its first line; `None` when neither says.
    pub fn detect(file_name: &str, code: &[u8]) -> Option<Self> {
        let lower = file_name.to_ascii_lowercase();
        if lower.ends_with(".py") {
            return Some(Language::Python);
        }
        if lower.ends_with(".sh") || lower.ends_with(".bash") {
            return Some(Language::Bash);
        }
        let first_line = code.split(|&b| b == b'\n').next().unwrap_or_default();
        let first_line = String::from_utf8_lossy(first_line);
        if first_line.starts_with("#!") {
            if first_line.contains("python") {
                return Some(Language::Python);
            }
            if first_line.contains("bash") || first_line.ends_with("/sh") || first_line.contains("/sh ") {
                return Some(Language::Bash);
            }
        }
        None
    }
}

impl std::str::FromStr for Language {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "python" | "py" | "python3" => Ok(Language::Python),
            "bash" | "sh" | "shell" => Ok(Language::Bash),
            other => Err(format!("unknown language {other:?} (python or bash)")),
        }
    }
}

/// Where the code came from. Behavioural (malicious-intent) rules block only `external` code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Written by Mai itself.
    Generated,
    /// Fetched or pasted from somewhere else.
    External,
}

impl Origin {
    /// The name the wire and the configuration give it.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Generated => "generated",
            Origin::External => "external",
        }
    }
}

impl std::str::FromStr for Origin {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "generated" => Ok(Origin::Generated),
            "external" => Ok(Origin::External),
            other => Err(format!("unknown origin {other:?} (generated or external)")),
        }
    }
}

/// The trust level a request asks for; it selects a quota class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrustLevel {
    Untrusted,
    Unknown,
    Trusted,
}

impl TrustLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            TrustLevel::Untrusted => "untrusted",
            TrustLevel::Unknown => "unknown",
            TrustLevel::Trusted => "trusted",
        }
    }
}

impl std::str::FromStr for TrustLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "untrusted" => Ok(TrustLevel::Untrusted),
            "unknown" => Ok(TrustLevel::Unknown),
            "trusted" => Ok(TrustLevel::Trusted),
            other => Err(format!("unknown trust level {other:?} (untrusted, unknown or trusted)")),
        }
    }
}

/// What the program is given besides its code.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Inputs {
    /// Arguments after the program name (`sys.argv[1:]`, `$@`).
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Bytes on the program's standard input.
    #[schemars(with = "Vec<u8>")]
    #[serde(default, with = "serde_bytes")]
    pub stdin: Vec<u8>,
    /// Files placed read-only in the working directory before the program starts (see
    /// [`crate::files`] for the bounds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<crate::files::InputFile>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionRequest {
    pub language: Language,
    /// The program's source, as bytes (it need not be valid UTF-8).
    #[schemars(with = "Vec<u8>")]
    #[serde(with = "serde_bytes")]
    pub code: Vec<u8>,
    pub origin: Origin,
    pub trust: TrustLevel,
    #[serde(default)]
    pub inputs: Inputs,
    /// Python packages (`name` or `name==version`) to install before the code runs. They are
    /// resolved to exact wheels and rated before the gate decides (see [`crate::packages`]).
    #[serde(default)]
    pub packages: Vec<String>,
    /// The request this one revises, so that the audit log can hold the diff.
    #[serde(default)]
    pub revises: Option<RequestId>,
    /// Unix milliseconds after which the request must not start running.
    #[serde(default)]
    pub deadline_ms: Option<i64>,
    /// A human label, such as the file name.
    #[serde(default)]
    pub label: Option<String>,
    /// The network the program asks for (`none` unless the policy grants `read-only`).
    #[serde(default, skip_serializing_if = "NetworkMode::is_none")]
    pub network: NetworkMode,
    /// Limits for this call below the trust level's quota (never above it): the gate grants
    /// the tighter of the two, field by field, and signs what it grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<RequestedLimits>,
    /// Ties the steps of one piece of work together in the audit log (a client's session: each
    /// step runs in a fresh sandbox with the files the last one left). Not part of what runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
}

/// Longest workspace name, in bytes.
pub const MAX_WORKSPACE_BYTES: usize = 64;

/// Per-call limits a request may ask for; each one set lowers the quota's, none raises it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequestedLimits {
    /// Wall-clock time, at least [`MIN_WALL_MS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    /// Memory, at least [`MIN_MEMORY_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// CPU in thousandths of a core, at least [`MIN_CPU_MILLIS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_millis: Option<u32>,
}

/// Floors of per-call limits: below them the interpreter itself cannot start, and the request
/// would only end in a violation that says nothing about the program.
pub const MIN_WALL_MS: u64 = 100;
pub const MIN_MEMORY_BYTES: u64 = 32 * 1024 * 1024;
pub const MIN_CPU_MILLIS: u32 = 10;

impl RequestedLimits {
    /// `limits` lowered by what is asked for here.
    pub fn lower(&self, limits: &crate::Limits) -> crate::Limits {
        let mut lowered = *limits;
        if let Some(wall) = self.wall_ms {
            lowered.wall_ms = lowered.wall_ms.min(wall);
        }
        if let Some(memory) = self.memory_bytes {
            lowered.memory_bytes = lowered.memory_bytes.min(memory);
        }
        if let Some(cpu) = self.cpu_millis {
            lowered.cpu_millis = lowered.cpu_millis.min(cpu);
        }
        lowered
    }

    fn validate(&self) -> Result<(), RequestError> {
        let too_low = |field: &'static str, value: u64, floor: u64| {
            (value < floor).then_some(RequestError::LimitTooLow { field, value, floor })
        };
        let checks = [
            self.wall_ms.and_then(|v| too_low("wall_ms", v, MIN_WALL_MS)),
            self.memory_bytes
                .and_then(|v| too_low("memory_bytes", v, MIN_MEMORY_BYTES)),
            self.cpu_millis
                .and_then(|v| too_low("cpu_millis", u64::from(v), u64::from(MIN_CPU_MILLIS))),
        ];
        match checks.into_iter().flatten().next() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("code is {size} bytes; at most {limit} are accepted")]
    CodeTooLarge { size: usize, limit: usize },
    #[error("code is empty")]
    EmptyCode,
    #[error("inputs are {size} bytes; at most {limit} are accepted")]
    InputsTooLarge { size: usize, limit: usize },
    #[error("{count} packages requested; at most {limit} are accepted")]
    TooManyPackages { count: usize, limit: usize },
    #[error("package spec {0:?} is not NAME or NAME==VERSION")]
    BadPackage(String),
    #[error("environment variable name {0:?} is not [A-Za-z_][A-Za-z0-9_]*")]
    BadEnvName(String),
    #[error("an argument or environment value contains a NUL byte")]
    NulInInput,
    #[error("{count} arguments; at most {limit} are accepted")]
    TooManyArgs { count: usize, limit: usize },
    #[error("{count} environment variables; at most {limit} are accepted")]
    TooManyEnvVars { count: usize, limit: usize },
    #[error(
        "environment variable {0} changes how the interpreter or the loader starts (code would run before the assessed program); it is refused"
    )]
    ForbiddenEnv(String),
    #[error("the label is {chars} characters; at most {limit} are accepted")]
    LabelTooLong { chars: usize, limit: usize },
    #[error("the label contains a control character")]
    ControlInLabel,
    #[error("limit {field} = {value} is below its floor {floor}")]
    LimitTooLow {
        field: &'static str,
        value: u64,
        floor: u64,
    },
    /// Python source that cannot be read as the interpreter would read it: a declared encoding
    /// other than UTF-8, ASCII or Latin-1, or bytes the interpreter itself refuses to decode.
    #[error("the Python source is refused: {0}")]
    PythonSource(#[from] crate::source::SourceRefusal),
    #[error(transparent)]
    Files(#[from] crate::files::FileError),
    #[error("workspace {0:?} is not 1 to {MAX_WORKSPACE_BYTES} letters, digits, `_` or `-`")]
    BadWorkspace(String),
}

impl ExecutionRequest {
    /// A request for `code`, generated by Mai, with the `unknown` quota and nothing else; the
    /// other fields are set by the methods named after them.
    pub fn new(language: Language, code: impl Into<Vec<u8>>) -> Self {
        Self {
            language,
            code: code.into(),
            origin: Origin::Generated,
            trust: TrustLevel::Unknown,
            inputs: Inputs::default(),
            packages: vec![],
            revises: None,
            deadline_ms: None,
            label: None,
            network: NetworkMode::None,
            limits: None,
            workspace: None,
        }
    }

    /// Limits for this call below the quota's (see [`RequestedLimits`]).
    pub fn limits(mut self, limits: RequestedLimits) -> Self {
        self.limits = (limits != RequestedLimits::default()).then_some(limits);
        self
    }

    pub fn origin(mut self, origin: Origin) -> Self {
        self.origin = origin;
        self
    }

    pub fn trust(mut self, trust: TrustLevel) -> Self {
        self.trust = trust;
        self
    }

    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.inputs.args = args.into_iter().map(Into::into).collect();
        self
    }

    pub fn env(mut self, env: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>) -> Self {
        self.inputs.env = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self
    }

    pub fn stdin(mut self, stdin: impl Into<Vec<u8>>) -> Self {
        self.inputs.stdin = stdin.into();
        self
    }

    pub fn files(mut self, files: Vec<crate::files::InputFile>) -> Self {
        self.inputs.files = files;
        self
    }

    pub fn packages(mut self, packages: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.packages = packages.into_iter().map(Into::into).collect();
        self
    }

    pub fn revises(mut self, revises: Option<RequestId>) -> Self {
        self.revises = revises;
        self
    }

    pub fn deadline_ms(mut self, deadline_ms: Option<i64>) -> Self {
        self.deadline_ms = deadline_ms;
        self
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn network(mut self, network: NetworkMode) -> Self {
        self.network = network;
        self
    }

    pub fn code_digest(&self) -> CodeDigest {
        CodeDigest::of(&self.code)
    }

    /// The digest of everything this request decides about what runs, for the client that
    /// submitted it, with its packages resolved and rated as `packages` (see [`crate::digest`]).
    pub fn request_digest(&self, request_id: &RequestId, packages: &[crate::packages::PackageRating]) -> CodeDigest {
        crate::digest::request_digest(self, request_id.client(), &crate::packages::wheels_of(packages))
    }

    /// Checks every field against its bound: code, inputs, environment names, label,
    /// packages. Mai is untrusted; the assessor refuses what this refuses, and the executor
    /// checks again before running.
    pub fn validate(&self) -> Result<(), RequestError> {
        self.validate_code()?;
        self.inputs.validate()?;
        if let Some(label) = &self.label {
            validate_label(label)?;
        }
        if let Some(limits) = &self.limits {
            limits.validate()?;
        }
        if let Some(workspace) = &self.workspace {
            let plain = workspace
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if workspace.is_empty() || workspace.len() > MAX_WORKSPACE_BYTES || !plain {
                return Err(RequestError::BadWorkspace(crate::text::clip(
                    workspace,
                    MAX_WORKSPACE_BYTES + 8,
                )));
            }
        }
        validate_packages(&self.packages)
    }

    fn validate_code(&self) -> Result<(), RequestError> {
        if self.code.is_empty() {
            return Err(RequestError::EmptyCode);
        }
        if self.code.len() > MAX_CODE_BYTES {
            return Err(RequestError::CodeTooLarge {
                size: self.code.len(),
                limit: MAX_CODE_BYTES,
            });
        }
        if self.language == Language::Python {
            // Read as the interpreter reads it, or not at all: what is assessed, shown and
            // signed must be the text that runs.
            crate::source::python_source_encoding(&self.code).text(&self.code)?;
        }
        Ok(())
    }
}

impl Inputs {
    fn validate(&self) -> Result<(), RequestError> {
        let size = self.stdin.len()
            + self.args.iter().map(|a| a.len() + 1).sum::<usize>()
            + self.env.iter().map(|(k, v)| k.len() + v.len() + 2).sum::<usize>();
        if size > MAX_INPUT_BYTES {
            return Err(RequestError::InputsTooLarge {
                size,
                limit: MAX_INPUT_BYTES,
            });
        }
        if self.args.iter().chain(self.env.values()).any(|s| s.contains('\0')) {
            return Err(RequestError::NulInInput);
        }
        crate::files::check_inputs(&self.files)?;
        if self.args.len() > MAX_ARGS {
            return Err(RequestError::TooManyArgs {
                count: self.args.len(),
                limit: MAX_ARGS,
            });
        }
        if self.env.len() > MAX_ENV_VARS {
            return Err(RequestError::TooManyEnvVars {
                count: self.env.len(),
                limit: MAX_ENV_VARS,
            });
        }
        for name in self.env.keys() {
            let mut chars = name.chars();
            let ok = name.len() <= MAX_ENV_NAME_BYTES
                && chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(RequestError::BadEnvName(crate::text::clip(name, MAX_ENV_NAME_BYTES)));
            }
            if !env_name_allowed(name) {
                return Err(RequestError::ForbiddenEnv(name.clone()));
            }
        }
        Ok(())
    }
}

fn validate_label(label: &str) -> Result<(), RequestError> {
    let chars = label.chars().count();
    if chars > MAX_LABEL_CHARS {
        return Err(RequestError::LabelTooLong {
            chars,
            limit: MAX_LABEL_CHARS,
        });
    }
    if crate::text::has_control(label) {
        return Err(RequestError::ControlInLabel);
    }
    Ok(())
}

fn validate_packages(packages: &[String]) -> Result<(), RequestError> {
    if packages.len() > MAX_PACKAGES {
        return Err(RequestError::TooManyPackages {
            count: packages.len(),
            limit: MAX_PACKAGES,
        });
    }
    for spec in packages {
        if !valid_package_spec(spec) {
            return Err(RequestError::BadPackage(crate::text::clip(spec, 160)));
        }
    }
    Ok(())
}

/// `NAME` or `NAME==VERSION`, with PEP 508 name characters and a plain version: nothing a pip
/// command line could read as an option, a URL or a path.
pub fn valid_package_spec(spec: &str) -> bool {
    let (name, version) = match spec.split_once("==") {
        Some((n, v)) => (n, Some(v)),
        None => (spec, None),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 100
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    let version_ok = version.is_none_or(|v| {
        !v.is_empty() && v.len() <= 50 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+!-".contains(&b))
    });
    name_ok && version_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(code: &[u8]) -> ExecutionRequest {
        ExecutionRequest::new(Language::Python, code)
    }

    #[test]
    fn per_call_limits_only_lower_and_have_floors() {
        let quota = crate::Quotas::default().unknown;
        let asked = RequestedLimits {
            wall_ms: Some(1500),
            memory_bytes: Some(u64::MAX),
            cpu_millis: None,
        };
        let lowered = asked.lower(&quota);
        assert_eq!(lowered.wall_ms, 1500.min(quota.wall_ms));
        assert_eq!(lowered.memory_bytes, quota.memory_bytes, "never raised");
        assert_eq!(lowered.cpu_millis, quota.cpu_millis, "not asked: the quota's");
        assert_eq!((RequestedLimits::default()).lower(&quota), quota);

        assert_eq!(request(b"x = 1").limits(asked).validate(), Ok(()));
        for (bad, field) in [
            (
                RequestedLimits {
                    wall_ms: Some(99),
                    ..Default::default()
                },
                "wall_ms",
            ),
            (
                RequestedLimits {
                    memory_bytes: Some(1024),
                    ..Default::default()
                },
                "memory_bytes",
            ),
            (
                RequestedLimits {
                    cpu_millis: Some(0),
                    ..Default::default()
                },
                "cpu_millis",
            ),
        ] {
            assert!(
                matches!(request(b"x = 1").limits(bad).validate(), Err(RequestError::LimitTooLow { field: f, .. }) if f == field),
                "{bad:?}"
            );
        }
        // Nothing asked is no field on the wire, so older services read the request unchanged.
        assert_eq!(request(b"x = 1").limits(RequestedLimits::default()).limits, None);
    }

    #[test]
    fn python_source_is_refused_when_it_cannot_be_read_as_the_interpreter_reads_it() {
        use crate::source::{SourceRefusal, Undecodable};
        let refused = request(b"# -*- coding: utf-7 -*-\n# +AAo-print(1)\n").validate();
        assert!(
            matches!(&refused, Err(RequestError::PythonSource(SourceRefusal::UnsupportedEncoding(c))) if c.name == "utf-7"),
            "{refused:?}"
        );
        assert_eq!(
            request(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n").validate(),
            Err(RequestError::PythonSource(SourceRefusal::Undecodable(
                Undecodable::BomConflict {
                    name: "iso-8859-1".into(),
                    line: 1
                }
            )))
        );
        assert!(request(b"x = 1\n\0\n").validate().is_err());
        // Latin-1 and ASCII are read with their codec; bash is not Python source.
        assert_eq!(request(b"# coding: latin-1\nw = '\xe9'\n").validate(), Ok(()));
        let mut bash = request(b"# coding: utf-7\necho +AAo-id\n");
        bash.language = Language::Bash;
        assert_eq!(bash.validate(), Ok(()));
    }

    #[test]
    fn validation_refuses_bad_requests() {
        assert!(request(b"print(1)").validate().is_ok());
        assert_eq!(request(b"").validate(), Err(RequestError::EmptyCode));
        let big = vec![b'#'; MAX_CODE_BYTES + 1];
        assert!(matches!(
            request(&big).validate(),
            Err(RequestError::CodeTooLarge { .. })
        ));
        let mut r = request(b"x");
        r.packages = vec!["--index-url=http://evil".into()];
        assert_eq!(
            r.validate(),
            Err(RequestError::BadPackage("--index-url=http://evil".into()))
        );
        r.packages = vec!["requests==2.31.0".into(), "six".into()];
        assert!(r.validate().is_ok());
        r.inputs.env.insert("1BAD".into(), "v".into());
        assert!(matches!(r.validate(), Err(RequestError::BadEnvName(_))));
    }

    #[test]
    fn interpreter_start_variables_are_refused() {
        for name in [
            "BASH_ENV",
            "ENV",
            "SHELLOPTS",
            "PS4",
            "PYTHONSTARTUP",
            "PYTHONPATH",
            "PYTHONHOME",
            "PYTHONWARNINGS",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "GLIBC_TUNABLES",
            "BASH_FUNC_x",
        ] {
            let mut r = request(b"x");
            r.inputs.env.insert(name.into(), "$(id)".into());
            assert_eq!(r.validate(), Err(RequestError::ForbiddenEnv(name.into())), "{name}");
        }
        for name in ["HOME", "LANG", "PYTHONUNBUFFERED", "MY_SETTING", "ld_preload"] {
            let mut r = request(b"x");
            r.inputs.env.insert(name.into(), "1".into());
            assert_eq!(r.validate(), Ok(()), "{name}");
        }
    }

    #[test]
    fn every_field_is_bounded() {
        let mut r = request(b"x");
        r.label = Some("é".repeat(MAX_LABEL_CHARS));
        assert_eq!(r.validate(), Ok(()));
        r.label = Some("é".repeat(MAX_LABEL_CHARS + 1));
        assert!(matches!(r.validate(), Err(RequestError::LabelTooLong { .. })));
        r.label = Some("fake\nline".into());
        assert_eq!(r.validate(), Err(RequestError::ControlInLabel));
        r.label = None;
        r.inputs.args = vec!["a".into(); MAX_ARGS + 1];
        assert!(matches!(r.validate(), Err(RequestError::TooManyArgs { .. })));
        r.inputs.args.clear();
        r.inputs.env = (0..=MAX_ENV_VARS).map(|i| (format!("V{i}"), String::new())).collect();
        assert!(matches!(r.validate(), Err(RequestError::TooManyEnvVars { .. })));
        r.inputs.env = [("A".repeat(MAX_ENV_NAME_BYTES + 1), String::new())].into();
        assert!(matches!(r.validate(), Err(RequestError::BadEnvName(_))));
    }

    #[test]
    fn language_detection() {
        assert_eq!(Language::detect("x.py", b""), Some(Language::Python));
        assert_eq!(Language::detect("x.sh", b""), Some(Language::Bash));
        assert_eq!(
            Language::detect("x", b"#!/usr/bin/env python3\n"),
            Some(Language::Python)
        );
        assert_eq!(Language::detect("x", b"#!/bin/sh\n"), Some(Language::Bash));
        assert_eq!(Language::detect("x", b"print(1)"), None);
    }
}
