//! Measuring the engine: agreement with bandit's findings per check id, and the confusion matrix
//! of a labelled corpus. Used by the benchmark binary (`assess-bench`) and by the corpus tests;
//! a crate of its own so that no release binary carries it.

use airlock_assessor::Engine;
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
    #[serde(default)]
    collection: Vec<Collection>,
}

/// A file of many short cases of one behaviour in one language, each headed by a line
/// `#@ NAME EXPECTED SPLIT [generated]`: EXPECTED is `BLOCKED`, `HIGH` (the least level that
/// counts as caught), `ASK` (caught when a human is asked: rated BLOCKED, or unanalysed, which
/// the gate always asks about) or `benign` (a false alarm when rated HIGH or above, or when it
/// makes the gate ask), SPLIT is `t` (training: rules may be written while looking at it) or `v`
/// (validation: kept aside).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Collection {
    pub file: String,
    pub language: Language,
    pub behaviour: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Split {
    Training,
    Validation,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Training => "training",
            Split::Validation => "validation",
        }
    }
}

/// One case of a collection.
#[derive(Debug, Clone)]
pub struct BehaviourCase {
    pub name: String,
    pub behaviour: String,
    pub language: Language,
    pub origin: Origin,
    pub expected: Expected,
    pub split: Split,
    pub code: String,
}

/// What a case of a collection is labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Risky: caught when rated at least this level.
    AtLeast(Level),
    /// Risky and beyond what the assessor can follow: caught when a human is asked.
    Ask,
    /// A look-alike of ordinary code.
    Benign,
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::AtLeast(level) => write!(f, "{level}"),
            Expected::Ask => f.write_str("ASK"),
            Expected::Benign => f.write_str("benign"),
        }
    }
}

#[derive(Debug)]
pub struct BehaviourOutcome {
    pub case: BehaviourCase,
    pub actual: Level,
    /// The assessment said part of the code could not be analysed (the gate asks a human).
    pub unanalysed: bool,
    pub summary: String,
}

impl BehaviourOutcome {
    /// A risky case rated at least its level (or, for `ASK`, put before a human); a benign one
    /// rated at most MEDIUM and not put before a human.
    pub fn correct(&self) -> bool {
        match self.case.expected {
            Expected::AtLeast(level) => self.actual >= level,
            Expected::Ask => self.actual == Level::Blocked || self.unanalysed,
            Expected::Benign => self.actual <= Level::Medium && !self.unanalysed,
        }
    }
}

fn parse_collection(collection: &Collection, text: &str, path: &Path) -> Result<Vec<BehaviourCase>, QualityError> {
    let mut cases: Vec<BehaviourCase> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let Some(header) = line.strip_prefix("#@ ") else {
            if let Some(case) = cases.last_mut() {
                case.code.push_str(line);
                case.code.push('\n');
            }
            continue;
        };
        let bad = |message: &str| QualityError::Format {
            path: path.to_path_buf(),
            message: format!("line {}: {message}: {line:?}", number + 1),
        };
        let fields: Vec<&str> = header.split_whitespace().collect();
        let [name, expected, split, rest @ ..] = fields.as_slice() else {
            return Err(bad("a case header is `#@ NAME EXPECTED SPLIT [generated]`"));
        };
        let expected = match *expected {
            "benign" => Expected::Benign,
            "ASK" => Expected::Ask,
            level => Expected::AtLeast(level.parse::<Level>().map_err(|e| bad(&e))?),
        };
        let split = match *split {
            "t" => Split::Training,
            "v" => Split::Validation,
            _ => return Err(bad("the split is `t` or `v`")),
        };
        let origin = match rest {
            [] => Origin::External,
            ["generated"] => Origin::Generated,
            _ => return Err(bad("only `generated` may follow the split")),
        };
        cases.push(BehaviourCase {
            name: name.to_string(),
            behaviour: collection.behaviour.clone(),
            language: collection.language,
            origin,
            expected,
            split,
            code: String::new(),
        });
    }
    Ok(cases)
}

/// Recall and false alarms of one behaviour, language and split.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BehaviourScore {
    pub risky: usize,
    pub caught: usize,
    pub benign: usize,
    pub false_alarms: usize,
}

#[derive(Debug)]
pub struct BehaviourReport {
    pub outcomes: Vec<BehaviourOutcome>,
}

/// The behaviours of issue 10's collections (the second round).
pub const SECOND_ROUND: [&str; 10] = [
    "credential_read",
    "destruction",
    "download_exec",
    "download_system",
    "exfiltration",
    "kill_by_name",
    "persistence",
    "privilege",
    "reverse_shell",
    "system_write",
];

/// The groups of issue 26's collections (the third round).
pub const THIRD_ROUND: [&str; 4] = ["tool_fallback", "local_data", "intent", "unknown"];

/// Issue 26's sixth pass: fresh cases of the same four groups, written before the pass read or
/// changed any rule, to measure how the rules generalise to code nobody wrote them for.
pub const SIXTH_PASS: [&str; 4] = [
    "fresh_tool_fallback",
    "fresh_local_data",
    "fresh_intent",
    "fresh_unknown",
];

/// Issue 26's seventh pass: a second set of fresh cases of the same four groups, written before
/// the pass read or changed any rule, in other styles, tools and libraries than the sets before.
pub const SEVENTH_PASS: [&str; 4] = [
    "seventh_tool_fallback",
    "seventh_local_data",
    "seventh_intent",
    "seventh_unknown",
];

impl BehaviourReport {
    /// The outcomes of these behaviours only.
    pub fn only(self, behaviours: &[&str]) -> BehaviourReport {
        BehaviourReport {
            outcomes: self
                .outcomes
                .into_iter()
                .filter(|o| behaviours.contains(&o.case.behaviour.as_str()))
                .collect(),
        }
    }

    /// Scores keyed by (split, behaviour, language name).
    pub fn scores(&self) -> BTreeMap<(Split, String, &'static str), BehaviourScore> {
        let mut scores: BTreeMap<(Split, String, &'static str), BehaviourScore> = BTreeMap::new();
        for outcome in &self.outcomes {
            let case = &outcome.case;
            let score = scores
                .entry((case.split, case.behaviour.clone(), case.language.as_str()))
                .or_default();
            if case.expected == Expected::Benign {
                score.benign += 1;
                score.false_alarms += usize::from(!outcome.correct());
            } else {
                score.risky += 1;
                score.caught += usize::from(outcome.correct());
            }
        }
        scores
    }

    /// Totals of one split.
    pub fn total(&self, split: Split) -> BehaviourScore {
        let mut total = BehaviourScore::default();
        for ((s, _, _), score) in self.scores() {
            if s == split {
                total.risky += score.risky;
                total.caught += score.caught;
                total.benign += score.benign;
                total.false_alarms += score.false_alarms;
            }
        }
        total
    }

    /// `matrix[expected][actual]` of one split, rows LOW (benign), HIGH, BLOCKED as labelled
    /// (`ASK` cases are counted apart: [`BehaviourReport::asked`]).
    pub fn confusion(&self, split: Split) -> [[usize; 4]; 4] {
        let mut matrix = [[0; 4]; 4];
        for outcome in self.outcomes.iter().filter(|o| o.case.split == split) {
            let expected = match outcome.case.expected {
                Expected::AtLeast(level) => level,
                Expected::Benign => Level::Low,
                Expected::Ask => continue,
            };
            matrix[level_index(expected)][level_index(outcome.actual)] += 1;
        }
        matrix
    }

    /// `ASK` cases of one split: how many there are, and how many put a human before the run.
    pub fn asked(&self, split: Split) -> (usize, usize) {
        let ask: Vec<_> = self
            .outcomes
            .iter()
            .filter(|o| o.case.split == split && o.case.expected == Expected::Ask)
            .collect();
        (ask.len(), ask.iter().filter(|o| o.correct()).count())
    }

    /// Markdown: the confusion matrix of a split, then recall and false alarms per behaviour.
    pub fn render(&self, split: Split) -> String {
        let matrix = self.confusion(split);
        let mut out = format!(
            "{} split: labelled (benign as LOW) \\ rated\n\n| labelled \\ rated | LOW | MEDIUM | HIGH | BLOCKED |\n|---|---|---|---|---|\n",
            split.as_str()
        );
        for (i, level) in LEVELS.iter().enumerate() {
            if matrix[i].iter().sum::<usize>() > 0 {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    if i == 0 {
                        "benign".to_string()
                    } else {
                        level.to_string()
                    },
                    matrix[i][0],
                    matrix[i][1],
                    matrix[i][2],
                    matrix[i][3]
                ));
            }
        }
        let (ask, asked) = self.asked(split);
        if ask > 0 {
            out.push_str(&format!(
                "\nLabelled ASK (beyond what the assessor can follow): {asked} of {ask} rated BLOCKED or unanalysed, so a human is asked.\n"
            ));
        }
        out.push_str(
            "\n| behaviour | language | caught at its level | false alarms (benign rated HIGH+ or asked about) |\n|---|---|---|---|\n",
        );
        for ((s, behaviour, language), score) in self.scores() {
            if s != split {
                continue;
            }
            out.push_str(&format!(
                "| {behaviour} | {language} | {}/{} | {}/{} |\n",
                score.caught, score.risky, score.false_alarms, score.benign
            ));
        }
        let total = self.total(split);
        out.push_str(&format!(
            "| all | both | {}/{} ({:.0}%) | {}/{} ({:.1}%) |\n",
            total.caught,
            total.risky,
            percent(total.caught, total.risky),
            total.false_alarms,
            total.benign,
            percent(total.false_alarms, total.benign)
        ));
        out
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Reads every collection of `dir/manifest.toml`.
pub fn behaviour_cases(dir: &Path) -> Result<Vec<BehaviourCase>, QualityError> {
    let manifest = read_manifest(dir)?;
    let mut cases = Vec::new();
    for collection in &manifest.collection {
        let path = dir.join(&collection.file);
        cases.extend(parse_collection(collection, &read(&path)?, &path)?);
    }
    Ok(cases)
}

/// Rates every case of every collection of `dir/manifest.toml`.
pub fn evaluate_behaviours(engine: &Engine, dir: &Path) -> Result<BehaviourReport, QualityError> {
    let outcomes = behaviour_cases(dir)?
        .into_iter()
        .map(|case| {
            let assessment = engine.assess(case.code.as_bytes(), case.language, case.origin);
            BehaviourOutcome {
                actual: assessment.level,
                unanalysed: assessment.unanalysed,
                summary: assessment.summary,
                case,
            }
        })
        .collect();
    Ok(BehaviourReport { outcomes })
}

fn read_manifest(dir: &Path) -> Result<Manifest, QualityError> {
    let manifest_path = dir.join("manifest.toml");
    toml::from_str(&read(&manifest_path)?).map_err(|e| QualityError::Format {
        path: manifest_path.clone(),
        message: e.to_string(),
    })
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
    let manifest = read_manifest(dir)?;
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
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../../shared/corpora"))
}

/// The repository's labelled corpus.
pub fn assessor_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/assessor-corpus")
}

// ---- generated files ------------------------------------------------------------------------

/// The files `assess-bench` times beside bandit's examples, as (name, language, text): a 200-line
/// Python script and a 200-line bash script of the kind an agent writes, a 65 KB dict literal,
/// and 100,000 nested parentheses.
pub fn generated_files() -> Vec<(&'static str, Language, String)> {
    let block = |i: usize| {
        format!(
            r#"def fetch_page_{i}(session, url, retries=3):
    """Fetch one page and keep the rows that mention the keyword."""
    for attempt in range(retries):
        response = session.get(url, params={{"page": {i}}}, timeout=10)
        if response.status_code == 200:
            break
    rows = []
    for item in response.json().get("items", []):
        if "keyword" in item.get("title", "").lower():
            rows.append({{"id": item["id"], "title": item["title"].strip()}})
    frame = pd.DataFrame(rows)
    frame["length"] = frame["title"].str.len()
    summary = frame.groupby("length").agg({{"id": "count"}})
    out = Path("out") / f"page_{i}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out)
    logging.info("page %s: %d rows", {i}, len(rows))
    return summary


"#
        )
    };
    let mut python =
        String::from("import logging\nfrom pathlib import Path\n\nimport pandas as pd\nimport requests\n\n\n");
    let mut i = 0;
    while python.lines().count() < 200 {
        python.push_str(&block(i));
        i += 1;
    }
    let python: String = python.lines().take(200).collect::<Vec<_>>().join("\n") + "\n";

    let mut shell = String::from("#!/bin/bash\nset -euo pipefail\nOUT=\"${OUT:-./out}\"\nmkdir -p \"$OUT\"\n");
    let mut i = 0;
    while shell.lines().count() < 200 {
        shell.push_str(&format!(
            "for f in data/part{i}_*.csv; do\n  lines=$(wc -l < \"$f\")\n  if [ \"$lines\" -gt 1 ]; then\n    cut -d, -f1,3 \"$f\" | sort | uniq -c > \"$OUT/$(basename \"$f\" .csv).counts\"\n  fi\ndone\ncurl -fsS --max-time 10 -o \"$OUT/ref{i}.json\" https://api.example.com/ref/{i}\ngrep -c error \"$OUT/ref{i}.json\" || true\n"
        ));
        i += 1;
    }
    let shell: String = shell.lines().take(200).collect::<Vec<_>>().join("\n") + "\n";

    let mut literal = String::from("WORDS = {\n");
    let mut n = 0;
    while literal.len() < 65 * 1024 {
        literal.push_str(&format!("    'word{n:05}': {n},\n"));
        n += 1;
    }
    literal.push_str("}\n");

    let deep = format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000));

    vec![
        ("generated-200-lines.py", Language::Python, python),
        ("generated-200-lines.sh", Language::Bash, shell),
        ("generated-65k-dict-literal.py", Language::Python, literal),
        ("generated-100k-nested-parens.py", Language::Python, deep),
    ]
}
