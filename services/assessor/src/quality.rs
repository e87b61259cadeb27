//! Measuring the engine: agreement with bandit's findings per check id, and the confusion matrix
//! of a labelled corpus. Used by the benchmark binary and by the tests.

use crate::Engine;
use airlock_protocol::assessment::Level;
use airlock_protocol::request::{Language, Origin};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum QualityError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
}

fn read(path: &Path) -> Result<String, QualityError> {
    std::fs::read_to_string(path).map_err(|source| QualityError::Io {
        path: path.to_path_buf(),
        source,
    })
}

// ---- bandit baseline --------------------------------------------------------------------------

#[derive(Debug, Clone, Deserialize)]
pub struct BaselineFinding {
    pub file: String,
    pub line: u32,
    pub test_id: String,
}

#[derive(Debug, Deserialize)]
pub struct Baseline {
    pub findings: Vec<BaselineFinding>,
    /// Files bandit could not parse.
    #[serde(default)]
    pub errors: Vec<String>,
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline, QualityError> {
        serde_json::from_str(&read(path)?).map_err(|e| QualityError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }
}

/// Agreement on one bandit check id, matching on file, line and id.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckScore {
    pub check: String,
    pub baseline: usize,
    pub ours: usize,
    pub agreed: usize,
}

impl CheckScore {
    pub fn recall(&self) -> Option<f64> {
        (self.baseline > 0).then(|| self.agreed as f64 / self.baseline as f64)
    }

    pub fn precision(&self) -> Option<f64> {
        (self.ours > 0).then(|| self.agreed as f64 / self.ours as f64)
    }
}

/// Every `.py` file under `dir`, as paths relative to it (the baseline's file names).
pub fn python_files(dir: &Path) -> Result<Vec<String>, QualityError> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = std::fs::read_dir(&current).map_err(|source| QualityError::Io {
            path: current.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "py")
                && let Ok(relative) = path.strip_prefix(dir)
            {
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Rates every Python file of the corpus and compares, per bandit check id, with the baseline.
/// Our findings count for every `Bxxx` id in their references.
pub fn compare_with_bandit(engine: &Engine, dir: &Path, baseline: &Baseline) -> Result<Vec<CheckScore>, QualityError> {
    let expected: BTreeSet<(String, u32, String)> = baseline
        .findings
        .iter()
        .map(|f| (f.file.clone(), f.line, f.test_id.clone()))
        .collect();
    let mut ours: BTreeSet<(String, u32, String)> = BTreeSet::new();
    for file in python_files(dir)? {
        let code = std::fs::read(dir.join(&file)).map_err(|source| QualityError::Io {
            path: dir.join(&file),
            source,
        })?;
        let assessment = engine.assess(&code, Language::Python, Origin::External);
        for finding in &assessment.findings {
            for reference in &finding.references {
                if is_bandit_id(reference) {
                    ours.insert((file.clone(), finding.line, reference.clone()));
                }
            }
        }
    }
    let mut scores: BTreeMap<String, CheckScore> = BTreeMap::new();
    let entry = |scores: &mut BTreeMap<String, CheckScore>, id: &str| {
        scores.entry(id.to_string()).or_insert_with(|| CheckScore {
            check: id.to_string(),
            baseline: 0,
            ours: 0,
            agreed: 0,
        });
    };
    for (_, _, id) in &expected {
        entry(&mut scores, id);
        if let Some(score) = scores.get_mut(id) {
            score.baseline += 1;
        }
    }
    for key in &ours {
        entry(&mut scores, &key.2);
        if let Some(score) = scores.get_mut(&key.2) {
            score.ours += 1;
            if expected.contains(key) {
                score.agreed += 1;
            }
        }
    }
    Ok(scores.into_values().collect())
}

fn is_bandit_id(reference: &str) -> bool {
    reference.len() == 4 && reference.starts_with('B') && reference[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Totals over all check ids.
pub fn totals(scores: &[CheckScore]) -> CheckScore {
    CheckScore {
        check: "all".into(),
        baseline: scores.iter().map(|s| s.baseline).sum(),
        ours: scores.iter().map(|s| s.ours).sum(),
        agreed: scores.iter().map(|s| s.agreed).sum(),
    }
}

// ---- labelled corpus --------------------------------------------------------------------------

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusCase {
    pub file: String,
    pub language: Language,
    pub origin: Origin,
    pub expected: Level,
    /// Why the case is rated so, for whoever changes a rule and sees it move.
    #[serde(default)]
    pub note: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    case: Vec<CorpusCase>,
}

#[derive(Debug)]
pub struct CorpusOutcome {
    pub case: CorpusCase,
    pub actual: Level,
    pub summary: String,
}

pub const LEVELS: [Level; 4] = [Level::Low, Level::Medium, Level::High, Level::Blocked];

#[derive(Debug)]
pub struct CorpusReport {
    pub outcomes: Vec<CorpusOutcome>,
}

impl CorpusReport {
    /// `matrix[expected][actual]`, in LOW, MEDIUM, HIGH, BLOCKED order.
    pub fn confusion(&self) -> [[usize; 4]; 4] {
        let mut matrix = [[0; 4]; 4];
        for outcome in &self.outcomes {
            matrix[level_index(outcome.case.expected)][level_index(outcome.actual)] += 1;
        }
        matrix
    }

    pub fn mismatches(&self) -> impl Iterator<Item = &CorpusOutcome> {
        self.outcomes.iter().filter(|o| o.actual != o.case.expected)
    }

    pub fn render_confusion(&self) -> String {
        let matrix = self.confusion();
        let mut out = String::from("| expected \\ rated | LOW | MEDIUM | HIGH | BLOCKED |\n|---|---|---|---|---|\n");
        for (i, level) in LEVELS.iter().enumerate() {
            out.push_str(&format!(
                "| {level} | {} | {} | {} | {} |\n",
                matrix[i][0], matrix[i][1], matrix[i][2], matrix[i][3]
            ));
        }
        out
    }
}

pub fn level_index(level: Level) -> usize {
    match level {
        Level::Low => 0,
        Level::Medium => 1,
        Level::High => 2,
        Level::Blocked => 3,
    }
}

/// Rates every case of `dir/manifest.toml`.
pub fn evaluate_corpus(engine: &Engine, dir: &Path) -> Result<CorpusReport, QualityError> {
    let manifest_path = dir.join("manifest.toml");
    let manifest: Manifest = toml::from_str(&read(&manifest_path)?).map_err(|e| QualityError::Format {
        path: manifest_path.clone(),
        message: e.to_string(),
    })?;
    let mut outcomes = Vec::new();
    for case in manifest.case {
        let path = dir.join(&case.file);
        let code = std::fs::read(&path).map_err(|source| QualityError::Io { path, source })?;
        let assessment = engine.assess(&code, case.language, case.origin);
        outcomes.push(CorpusOutcome {
            actual: assessment.level,
            summary: assessment.summary,
            case,
        });
    }
    Ok(CorpusReport { outcomes })
}

/// The corpora shared beside the repository (`../shared/corpora` from the workspace root), or
/// `$AIRLOCK_CORPORA`.
pub fn shared_corpora() -> PathBuf {
    std::env::var_os("AIRLOCK_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora"))
}

/// The repository's labelled corpus.
pub fn assessor_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/assessor-corpus")
}
