//! The engine: configuration, loading rules and threats, and rating one program.

use crate::budget::Budget;
use crate::facts::{LineIndex, Span};
use crate::matcher::{self, MatchInput};
use crate::rules::RuleSet;
use crate::threats::ThreatList;
use crate::{builtin, extract, input, summary};
use airlock_protocol::assessment::{Assessment, Category, Confidence, Finding, Level, ParseStatus};
use airlock_protocol::request::{ExecutionRequest, Inputs, Language, MAX_CODE_BYTES, Origin};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod findings;

pub use crate::error::{EngineError, RegexError};
use findings::is_interpreter_start_variable;
use findings::{FindingPolicy, trojan_finding};
pub use findings::{MAX_EXPLANATION_CHARS, MAX_FINDINGS, MAX_SNIPPET_CHARS};

/// The `[assessor]` section of the stack's configuration. Every field has a default.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default)]
pub struct EngineConfig {
    /// Directory of rule files (`*.toml`). Unset: the rules compiled into the binary.
    pub rules_dir: Option<PathBuf>,
    /// Threat list file. Unset: the list compiled into the binary.
    pub threats_file: Option<PathBuf>,
    /// Larger programs are not parsed (they are rated `unanalysed_level`).
    pub max_input_bytes: usize,
    /// Limit for analysing one program, parsing included, in CPU time of the analysing thread (a
    /// loaded host slows the wall clock, not what a request may be given). `"250ms"` in TOML.
    #[serde(with = "humantime_serde")]
    pub analysis_budget: Duration,
    /// The previous release's key for `analysis_budget`, in milliseconds: read for one more
    /// release (`Config::load` folds it in with a warning).
    #[serde(skip_serializing)]
    pub analysis_budget_ms: Option<u64>,
    /// Syntax nested deeper than this is not analysed (and the program is rated
    /// `unanalysed_level`): no legitimate program needs it, and it bounds the stack.
    pub max_nesting_depth: u32,
    pub thresholds: Thresholds,
    /// A BLOCKED finding with less confidence than this rates HIGH.
    pub blocked_min_confidence: Confidence,
    /// The level of a program that could not be analysed (binary, too large, too deep, over the
    /// time budget): nobody could tell what it does.
    pub unanalysed_level: Level,
    /// Reload rules and threats when their files change.
    pub watch: bool,
    /// Whether what the assessor cannot follow in external code (a value it cannot resolve
    /// reaching exec or a shell, an interpreter it does not read) asks a human whatever the
    /// level. True for programs; false for the libraries a request's packages bring, where such
    /// a value is mostly a parameter, the caller's, and the caller (the program) is rated with
    /// this on. Not a setting: the executor turns it off for package code only.
    #[serde(skip, default = "asks")]
    pub unknown_asks_a_human: bool,
}

fn asks() -> bool {
    true
}

impl EngineConfig {
    /// The analysis budget: the previous release's `analysis_budget_ms` when a file still sets
    /// it, else `analysis_budget`.
    pub fn budget(&self) -> Duration {
        self.analysis_budget_ms
            .map(Duration::from_millis)
            .unwrap_or(self.analysis_budget)
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            rules_dir: None,
            threats_file: None,
            max_input_bytes: MAX_CODE_BYTES,
            analysis_budget: Duration::from_millis(250),
            analysis_budget_ms: None,
            max_nesting_depth: 256,
            thresholds: Thresholds::default(),
            blocked_min_confidence: Confidence::Medium,
            unanalysed_level: Level::High,
            watch: true,
            unknown_asks_a_human: true,
        }
    }
}

/// Besides the most severe finding, many lesser ones add up: each distinct rule that matched
/// adds the weight of its severity, and the sum raises the level at these thresholds.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default)]
pub struct Thresholds {
    pub weight_low: f64,
    pub weight_medium: f64,
    /// Sum at which the level is at least MEDIUM.
    pub medium: f64,
    /// Sum at which the level is at least HIGH.
    pub high: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            weight_low: 1.0,
            weight_medium: 3.0,
            medium: 3.0,
            high: 12.0,
        }
    }
}

/// A loaded rule set and threat list. Immutable: reloading builds a new engine.
#[derive(Debug)]
pub struct Engine {
    rules: RuleSet,
    threats: ThreatList,
    config: EngineConfig,
}

impl Engine {
    /// Rules and threat list compiled into the binary, default configuration.
    pub fn builtin() -> Result<Engine, EngineError> {
        Engine::load(&EngineConfig::default())
    }

    /// Rules from `config.rules_dir` and threats from `config.threats_file` (each falling back to
    /// the compiled-in files when unset).
    pub fn load(config: &EngineConfig) -> Result<Engine, EngineError> {
        let rules = match &config.rules_dir {
            Some(dir) => RuleSet::compile(&read_rule_dir(dir)?)?,
            None => RuleSet::compile_prebuilt(builtin::RULE_FILES, builtin::RULES_VERSION)?,
        };
        let threats = match &config.threats_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| EngineError::Io {
                    path: path.clone(),
                    source,
                })?;
                ThreatList::parse(&path.display().to_string(), &text)?
            }
            None => ThreatList::parse(builtin::THREATS_FILE, builtin::THREATS)?,
        };
        tracing::info!(
            rules = rules.rules.len(),
            rules_version = %rules.version,
            threats_version = %threats.version,
            "assessor engine loaded"
        );
        Ok(Engine {
            rules,
            threats,
            config: config.clone(),
        })
    }

    fn findings(&self) -> FindingPolicy<'_> {
        FindingPolicy {
            blocked_min_confidence: self.config.blocked_min_confidence,
            unanalysed_level: self.config.unanalysed_level,
            unknown_asks_a_human: self.config.unknown_asks_a_human,
            threats_version: &self.threats.version,
        }
    }

    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    pub fn rules_version(&self) -> &str {
        &self.rules.version
    }

    pub fn threats_version(&self) -> &str {
        &self.threats.version
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Rates a program. Never panics and returns within about the configured analysis budget,
    /// whatever the bytes.
    pub fn assess(&self, code: &[u8], language: Language, origin: Origin) -> Assessment {
        self.assess_with_inputs(code, language, origin, None)
    }

    /// Rates a whole request: the program, with its arguments and environment as the known values
    /// of `sys.argv[1:]` / `$1…` and `os.environ[...]` / `$NAME`, and those values themselves
    /// (an interpreter-start variable such as `BASH_ENV` or `LD_PRELOAD` is code the program's
    /// text does not show).
    pub fn assess_request(&self, request: &ExecutionRequest) -> Assessment {
        self.assess_with_inputs(&request.code, request.language, request.origin, Some(&request.inputs))
    }

    fn assess_with_inputs(
        &self,
        code: &[u8],
        language: Language,
        origin: Origin,
        inputs: Option<&Inputs>,
    ) -> Assessment {
        let started = Instant::now();
        let mut findings = Vec::new();
        for hit in self.threats.scan(code) {
            findings.push(self.findings().threat_finding(code, &hit));
        }
        if let Some(inputs) = inputs {
            self.findings().rate_inputs(inputs, origin, &mut findings);
        }
        let (parse, facts_summary) = self.analyse(code, language, origin, inputs, &mut findings);
        findings.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(a.line.cmp(&b.line))
                .then(a.rule_id.cmp(&b.rule_id))
        });
        let total_findings = findings.len();
        // Every input finding says that some of the code could not be analysed (or read as the
        // interpreter reads it): counted before the list is cut.
        let unanalysed = findings.iter().any(|f| f.category == Category::Input);
        findings.truncate(MAX_FINDINGS);
        let level = self.level(&findings);
        let summary = summary::write(&summary::Input {
            level,
            language,
            origin,
            parse: &parse,
            findings: &findings,
            total_findings,
            rules: &self.rules,
            facts: &facts_summary,
        });
        Assessment {
            level,
            findings,
            parse,
            summary,
            language,
            origin,
            rules_version: self.rules.version.clone(),
            threats_version: self.threats.version.clone(),
            elapsed_us: started.elapsed().as_micros().min(u128::from(u64::MAX)) as u64,
            unanalysed,
            packages: Vec::new(),
        }
    }

    fn analyse(
        &self,
        code: &[u8],
        language: Language,
        origin: Origin,
        inputs: Option<&Inputs>,
        findings: &mut Vec<Finding>,
    ) -> (ParseStatus, summary::FactsSummary) {
        let mut facts_summary = summary::FactsSummary::default();
        if code.len() > self.config.max_input_bytes {
            let reason = format!(
                "{} bytes; the assessor analyses at most {}",
                code.len(),
                self.config.max_input_bytes
            );
            findings.push(
                self.findings()
                    .cut_short_finding("AIR-INPUT-TOO-LARGE", &reason, origin),
            );
            return (ParseStatus::Unparsed { reason }, facts_summary);
        }
        let input = input::read(code, language);
        for problem in &input.problems {
            findings.push(self.findings().unanalysable_finding(problem, origin));
        }
        let Some(text) = input.text else {
            let reason = input
                .problems
                .iter()
                .map(|p| p.reason.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            return (ParseStatus::Unparsed { reason }, facts_summary);
        };
        let mut ctx = extract::context(
            &self.rules,
            Budget::new(self.config.budget()),
            self.config.max_nesting_depth,
        );
        ctx.inputs = inputs;
        if let Some(inputs) = inputs {
            // Values that an interpreter runs as code at start-up are analysed as code.
            for (name, value) in &inputs.env {
                if is_interpreter_start_variable(name) {
                    ctx.extract_embedded(Language::Bash, &format!("echo {value}"), Span::default());
                }
            }
        }
        let total_lines = text.lines().count().max(1);
        let parse = match ctx.extract(language, &text, None) {
            Some(errors) if errors.count == 0 => ParseStatus::Complete,
            Some(errors) => ParseStatus::Partial {
                error_count: errors.count,
                first_error_line: errors.first_line,
            },
            None if ctx.too_deep => {
                let reason = format!(
                    "syntax nested deeper than {} levels was not parsed (first past the limit near line {})",
                    self.config.max_nesting_depth,
                    ctx.reached_line.max(1)
                );
                findings.push(self.findings().cut_short_finding("AIR-INPUT-TOO-DEEP", &reason, origin));
                return (ParseStatus::Unparsed { reason }, facts_summary);
            }
            None => {
                let reached = text.get(..ctx.budget.parsed_to).map_or(0, |t| t.lines().count()).max(1);
                let reason = format!(
                    "parsing did not finish within the analysis budget of {}; it stopped near line {reached} of {total_lines}",
                    humantime::format_duration(self.config.budget()),
                );
                findings.push(self.findings().cut_short_finding("AIR-INPUT-BUDGET", &reason, origin));
                return (ParseStatus::Unparsed { reason }, facts_summary);
            }
        };
        let input = MatchInput {
            language,
            source: &text,
            python: &ctx.python,
            shell: &ctx.shell,
        };
        let hits = matcher::run(&self.rules, &input, &mut ctx.budget);
        facts_summary = summary::FactsSummary::of(language, &ctx.python, &ctx.shell);
        for hit in hits {
            if let Some(rule) = self.rules.rules.get(hit.rule) {
                findings.push(self.findings().rule_finding(rule, &hit, &text, origin));
            }
        }
        findings.extend(self.findings().destination_findings(
            &[&ctx.python, &ctx.shell],
            &text,
            &self.threats.destinations,
        ));
        for problem in &ctx.unreadable {
            findings.push(self.findings().unanalysable_finding(problem, origin));
        }
        if !ctx.trojan.is_empty() {
            let lines = LineIndex::new(&text);
            for hit in &ctx.trojan {
                findings.push(trojan_finding(hit, &lines, &text));
            }
        }
        if ctx.too_deep {
            let reason = format!(
                "syntax nested deeper than {} levels was not analysed (first past the limit near line {})",
                self.config.max_nesting_depth,
                ctx.reached_line.max(1)
            );
            findings.push(self.findings().cut_short_finding("AIR-INPUT-TOO-DEEP", &reason, origin));
        }
        if ctx.budget.check_now() {
            let reason = format!(
                "analysis stopped at its budget of {} near line {} of {total_lines}; the rest of the code was not checked",
                humantime::format_duration(self.config.budget()),
                ctx.reached_line.max(1)
            );
            findings.push(self.findings().cut_short_finding("AIR-INPUT-BUDGET", &reason, origin));
        }
        (parse, facts_summary)
    }

    /// The most severe finding's level, raised by the weight of many lesser ones.
    fn level(&self, findings: &[Finding]) -> Level {
        let most_severe = findings.iter().map(|f| f.severity).max().unwrap_or(Level::Low);
        let mut seen = std::collections::HashSet::new();
        let mut score = 0.0;
        for finding in findings {
            // What could not be analysed asks a human already; it is not evidence of risk.
            if finding.category == Category::Input {
                continue;
            }
            if seen.insert(finding.rule_id.as_str()) {
                score += match finding.severity {
                    Level::Low => self.config.thresholds.weight_low,
                    Level::Medium => self.config.thresholds.weight_medium,
                    Level::High | Level::Blocked => 0.0,
                };
            }
        }
        let by_score = if score >= self.config.thresholds.high {
            Level::High
        } else if score >= self.config.thresholds.medium {
            Level::Medium
        } else {
            Level::Low
        };
        most_severe.max(by_score)
    }
}

fn read_rule_dir(dir: &Path) -> Result<Vec<(String, String)>, EngineError> {
    let io = |source| EngineError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
            let text = std::fs::read_to_string(&path).map_err(|source| EngineError::Io {
                path: path.clone(),
                source,
            })?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((name, text));
        }
    }
    if files.is_empty() {
        return Err(EngineError::NoRuleFiles(dir.to_path_buf()));
    }
    Ok(files)
}
