//! Rule files: their format, and compiling them into a [`RuleSet`].
//!
//! A rule file is TOML with four kinds of entries:
//! - `[[rule]]`: a finding to report when its `match` pattern matches;
//! - `[[source]]`: a data-flow source (a call or name whose result carries a label, such as
//!   `sensitive_file` or `decoded`) that rules test with `tainted`;
//! - `[[embed]]`: where code in one language carries code in another (`os.system("...")`,
//!   `bash -c "..."`), so the inner code is analysed too;
//! - `[[wrapper]]`: shell commands that run another command (`sudo`, `nohup`, `find -exec`).
//!
//! Everything is checked when loaded (unknown keys, bad regular expressions, bad tree-sitter
//! queries, unknown labels, duplicate ids), so a broken file is refused whole and a running
//! engine keeps its previous rule set.

use crate::engine::EngineError;
use crate::facts::{BindingKind, Call, Expr, Value};
use crate::shell::program_name;
use airlock_protocol::assessment::{Category, Confidence, Level};
use airlock_protocol::request::Language;
use regex::{Regex, RegexSet};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};

// ---- the file format ----------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    #[serde(default)]
    pub rule: Vec<RuleSpec>,
    #[serde(default)]
    pub source: Vec<SourceSpec>,
    #[serde(default)]
    pub embed: Vec<EmbedSpec>,
    #[serde(default)]
    pub wrapper: Vec<WrapperSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub id: String,
    pub category: Category,
    pub severity: Level,
    pub confidence: Confidence,
    pub languages: Vec<Language>,
    /// What the code does when this rule matches, as a phrase for the summary
    /// ("runs shell commands"); defaults to the rule id.
    #[serde(default)]
    pub action: Option<String>,
    pub explanation: String,
    #[serde(default)]
    pub references: Vec<String>,
    #[serde(rename = "match")]
    pub pattern: PatternSpec,
    #[serde(default)]
    pub examples: Examples,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Examples {
    /// Code that must produce this rule's finding.
    #[serde(rename = "match", default)]
    pub matching: Vec<String>,
    /// Code that must not.
    #[serde(default)]
    pub no_match: Vec<String>,
    /// Language of the examples, when the rule has several.
    #[serde(default)]
    pub language: Option<Language>,
}

/// A pattern: exactly one subject (`call`, `import`, `string`, `binding`, `name`, `query`,
/// `text`, `all`, `any`) and the constraints that subject takes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternSpec {
    /// Calls (Python) or commands (shell) by name; `*` matches any run of characters.
    pub call: Option<Vec<String>>,
    /// Imported modules or members by qualified name.
    pub import: Option<Vec<String>>,
    /// String literals (and shell words) whose text matches this regular expression.
    pub string: Option<String>,
    pub binding: Option<BindingSpec>,
    /// Resolved references to module attributes (`ssl.PROTOCOL_SSLv2`).
    pub name: Option<Vec<String>>,
    /// A tree-sitter query over the file's syntax tree; the finding is at its first capture.
    pub query: Option<String>,
    /// A regular expression over the raw source text.
    pub text: Option<String>,
    /// Every sub-pattern matches somewhere in the file (a capability meeting a threat); the
    /// finding is at the first sub-pattern's match.
    pub all: Option<Vec<PatternSpec>>,
    /// Any sub-pattern matches.
    pub any: Option<Vec<PatternSpec>>,

    // Constraints on `call`.
    #[serde(default)]
    pub not_call: Vec<String>,
    /// Positional arguments by index ("0" is the first).
    #[serde(default)]
    pub args: BTreeMap<String, ValueSpec>,
    #[serde(default)]
    pub kwargs: BTreeMap<String, ValueSpec>,
    /// Some argument, positional or keyword, matches; given a list, each entry must be matched
    /// by some argument.
    pub any_arg: Option<OneOrMany<ValueSpec>>,
    pub receiver: Option<ValueSpec>,
    /// Shell options that must all be present (`r` for `-r` or `-rf`, `recursive` for
    /// `--recursive`).
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default)]
    pub any_flag: Vec<String>,
    /// Labels of which at least one reaches an argument, the receiver or standard input.
    #[serde(default)]
    pub tainted: Vec<String>,
    /// Shell: some earlier pipeline stage runs one of these.
    #[serde(default)]
    pub pipe_from: Vec<String>,
    /// Shell: some later pipeline stage runs one of these.
    #[serde(default)]
    pub pipe_to: Vec<String>,
    /// Shell: runs under one of these wrappers.
    #[serde(default)]
    pub via: Vec<String>,

    // Constraint on `string`.
    /// Only strings built with (`true`) or without (`false`) non-literal parts.
    pub formatted: Option<bool>,

    // Constraint on `all`.
    /// The file must match none of these.
    #[serde(default)]
    pub none: Vec<PatternSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(one) => std::slice::from_ref(one),
            OneOrMany::Many(many) => many,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindingSpec {
    #[serde(default = "all_binding_kinds")]
    pub kinds: Vec<BindingKind>,
    /// Regular expression over the target name.
    pub target: String,
    #[serde(default)]
    pub value: ValueSpec,
}

fn all_binding_kinds() -> Vec<BindingKind> {
    vec![
        BindingKind::Assign,
        BindingKind::Compare,
        BindingKind::DictEntry,
        BindingKind::Kwarg,
        BindingKind::Default,
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueKind {
    Str,
    Formatted,
    /// `str` or `formatted`.
    String,
    Int,
    Float,
    Bool,
    None,
    Name,
    Call,
    Seq,
    Other,
    Literal,
    Nonliteral,
}

/// Constraints on one value; all that are given must hold. Given no constraint at all, a value
/// only has to be present.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSpec {
    /// The value is (`true`) or is not (`false`) given.
    pub present: Option<bool>,
    /// Regular expression over the text of a string, formatted string or sequence.
    pub regex: Option<String>,
    /// The text equals one of these.
    pub equals: Option<Vec<String>>,
    pub kind: Option<Vec<ValueKind>>,
    /// A literal whose Python truth value is this.
    pub truthy: Option<bool>,
    pub int_lt: Option<i64>,
    pub int_ge: Option<i64>,
    /// An integer with any of these bits set (`0o4000` for setuid).
    pub int_bits: Option<i64>,
    /// A reference or call result by qualified name (`*` globs).
    pub name: Option<Vec<String>>,
    pub tainted: Option<Vec<String>>,
    /// Some element of a sequence matches.
    pub element: Option<Box<ValueSpec>>,
    /// The first element of a sequence (or the value itself when it is not one) matches.
    pub first: Option<Box<ValueSpec>>,
    pub not: Option<Box<ValueSpec>>,
    pub any_of: Option<Vec<ValueSpec>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    pub label: String,
    pub languages: Vec<Language>,
    /// A `call` or `name` pattern.
    #[serde(rename = "match")]
    pub pattern: PatternSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedSpec {
    pub from: Language,
    pub to: Language,
    pub call: Vec<String>,
    /// Positional index of the code (default 0 unless `after_flag` or `all_args`).
    #[serde(default)]
    pub arg: Option<usize>,
    /// Keyword that may carry the code instead (`args` for `subprocess.run(args=...)`).
    #[serde(default)]
    pub kwarg: Option<String>,
    /// The code is the word after the option with this letter (`c` for `bash -c`, `-lc`).
    #[serde(default)]
    pub after_flag: Option<String>,
    /// The code is all arguments joined by spaces (`eval`).
    #[serde(default)]
    pub all_args: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapperSpec {
    pub name: Vec<String>,
    /// Options that take the next word as their value (`-u` of `sudo -u root`).
    #[serde(default)]
    pub options_with_value: Vec<String>,
    /// Skips `NAME=value` words (`env`).
    #[serde(default)]
    pub skip_assignments: bool,
    /// Positional words before the command (the duration of `timeout 10 cmd`).
    #[serde(default)]
    pub skip_positionals: usize,
    /// The command starts after one of these words and ends at `;` or `+` (`find -exec`).
    #[serde(default)]
    pub starts_after: Vec<String>,
}

impl WrapperSpec {
    /// The command this wrapper runs, as an argument vector.
    pub fn inner_command(&self, words: &[Expr]) -> Vec<Expr> {
        let text = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.text())
                .map(|t| t.into_owned())
                .unwrap_or_default()
        };
        if !self.starts_after.is_empty() {
            let Some(start) = (1..words.len()).find(|&i| self.starts_after.contains(&text(i))) else {
                return Vec::new();
            };
            let end = (start + 1..words.len())
                .find(|&i| matches!(text(i).as_str(), ";" | "+" | "\\;"))
                .unwrap_or(words.len());
            return words.get(start + 1..end).map(<[Expr]>::to_vec).unwrap_or_default();
        }
        let mut i = 1;
        while i < words.len() {
            let word = text(i);
            if word == "--" {
                i += 1;
                break;
            }
            if word.starts_with('-') && word.len() > 1 {
                i += if self.options_with_value.contains(&word) { 2 } else { 1 };
                continue;
            }
            if self.skip_assignments && is_assignment(&word) {
                i += 1;
                continue;
            }
            break;
        }
        let start = i + self.skip_positionals;
        words.get(start..).map(<[Expr]>::to_vec).unwrap_or_default()
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}

// ---- compiled form ----------------------------------------------------------------------------

/// Names with `*` globs, matched as a hash lookup for plain names and one regex for the globs.
#[derive(Debug, Clone, Default)]
pub struct NameSet {
    exact: HashSet<String>,
    globs: Option<Regex>,
}

impl NameSet {
    fn compile(names: &[String]) -> Result<NameSet, String> {
        let mut exact = HashSet::new();
        let mut globs = Vec::new();
        for name in names {
            if name.contains('*') {
                let escaped: Vec<String> = name.split('*').map(regex::escape).collect();
                globs.push(escaped.join(".*"));
            } else {
                exact.insert(name.clone());
            }
        }
        let globs = if globs.is_empty() {
            None
        } else {
            Some(Regex::new(&format!("^(?:{})$", globs.join("|"))).map_err(|e| e.to_string())?)
        };
        Ok(NameSet { exact, globs })
    }

    pub fn contains(&self, name: &str) -> bool {
        self.exact.contains(name) || self.globs.as_ref().is_some_and(|g| g.is_match(name))
    }
}

#[derive(Debug, Clone)]
pub struct ValueMatcher {
    present: Option<bool>,
    regex: Option<Regex>,
    equals: Option<Vec<String>>,
    kind: Option<Vec<ValueKind>>,
    truthy: Option<bool>,
    int_lt: Option<i64>,
    int_ge: Option<i64>,
    int_bits: Option<i64>,
    name: Option<NameSet>,
    tainted: Option<crate::facts::Taints>,
    element: Option<Box<ValueMatcher>>,
    first: Option<Box<ValueMatcher>>,
    not: Option<Box<ValueMatcher>>,
    any_of: Option<Vec<ValueMatcher>>,
}

impl ValueMatcher {
    pub fn matches(&self, value: Option<&Expr>) -> bool {
        if let Some(present) = self.present
            && present != value.is_some()
        {
            return false;
        }
        if let Some(not) = &self.not
            && not.matches(value)
        {
            return false;
        }
        if let Some(any_of) = &self.any_of
            && !any_of.iter().any(|m| m.matches(value))
        {
            return false;
        }
        let needs_value = self.present.is_none() && self.not.is_none() && self.any_of.is_none();
        let Some(expr) = value else {
            return !self.has_value_constraints() && !needs_value;
        };
        self.value_constraints_hold(expr)
    }

    fn has_value_constraints(&self) -> bool {
        self.regex.is_some()
            || self.equals.is_some()
            || self.kind.is_some()
            || self.truthy.is_some()
            || self.int_lt.is_some()
            || self.int_ge.is_some()
            || self.int_bits.is_some()
            || self.name.is_some()
            || self.tainted.is_some()
            || self.element.is_some()
            || self.first.is_some()
    }

    fn value_constraints_hold(&self, expr: &Expr) -> bool {
        let string_text = || match &expr.value {
            Value::Str(_) | Value::Path(_) | Value::Formatted(_) | Value::Seq(_) => expr.text(),
            _ => None,
        };
        if let Some(regex) = &self.regex
            && !string_text().is_some_and(|t| regex.is_match(&t))
        {
            return false;
        }
        if let Some(equals) = &self.equals
            && !string_text().is_some_and(|t| equals.iter().any(|e| e == t.as_ref()))
        {
            return false;
        }
        if let Some(kinds) = &self.kind
            && !kinds.iter().any(|k| kind_matches(*k, expr))
        {
            return false;
        }
        if let Some(truthy) = self.truthy
            && expr.literal_truthiness() != Some(truthy)
        {
            return false;
        }
        let int = match expr.value {
            Value::Int(i) => Some(i),
            _ => None,
        };
        if let Some(limit) = self.int_lt
            && int.is_none_or(|i| i >= limit)
        {
            return false;
        }
        if let Some(limit) = self.int_ge
            && int.is_none_or(|i| i < limit)
        {
            return false;
        }
        if let Some(bits) = self.int_bits
            && int.is_none_or(|i| i & bits == 0)
        {
            return false;
        }
        if let Some(names) = &self.name {
            let matched = match &expr.value {
                Value::Name(q) | Value::Call(q) => names.contains(q),
                _ => false,
            };
            if !matched {
                return false;
            }
        }
        if let Some(labels) = self.tainted
            && !expr.taints.intersects(labels)
        {
            return false;
        }
        if let Some(element) = &self.element {
            let matched = match &expr.value {
                Value::Seq(items) => items.iter().any(|i| element.matches(Some(i))),
                _ => false,
            };
            if !matched {
                return false;
            }
        }
        if let Some(first) = &self.first {
            let head = match &expr.value {
                Value::Seq(items) => items.first(),
                _ => Some(expr),
            };
            if !first.matches(head) {
                return false;
            }
        }
        true
    }
}

fn kind_matches(kind: ValueKind, expr: &Expr) -> bool {
    match (kind, &expr.value) {
        (ValueKind::Str, Value::Str(_) | Value::Path(_))
        | (ValueKind::Formatted, Value::Formatted(_))
        | (ValueKind::String, Value::Str(_) | Value::Path(_) | Value::Formatted(_))
        | (ValueKind::Int, Value::Int(_))
        | (ValueKind::Float, Value::Float(_))
        | (ValueKind::Bool, Value::Bool(_))
        | (ValueKind::None, Value::None)
        | (ValueKind::Name, Value::Name(_))
        | (ValueKind::Call, Value::Call(_))
        | (ValueKind::Seq, Value::Seq(_))
        | (ValueKind::Other, Value::Other) => true,
        (ValueKind::Literal, _) => expr.is_literal(),
        (ValueKind::Nonliteral, _) => !expr.is_literal(),
        _ => false,
    }
}

#[derive(Debug, Clone)]
pub struct CallPattern {
    pub names: NameSet,
    pub not_names: NameSet,
    pub args: Vec<(usize, ValueMatcher)>,
    pub kwargs: Vec<(String, ValueMatcher)>,
    pub any_arg: Vec<ValueMatcher>,
    pub receiver: Option<ValueMatcher>,
    pub flags: Vec<String>,
    pub any_flag: Vec<String>,
    pub tainted: Option<crate::facts::Taints>,
    pub pipe_from: Option<NameSet>,
    pub pipe_to: Option<NameSet>,
    pub via: Option<NameSet>,
}

impl CallPattern {
    /// Everything but the name, which callers check first (often through an index).
    pub fn constraints_hold(&self, call: &Call) -> bool {
        if self.not_names.contains(&call.name) {
            return false;
        }
        if let Some(labels) = self.tainted
            && !call.taints.intersects(labels)
        {
            return false;
        }
        if !self.flags.iter().all(|f| call.flags.contains(f)) {
            return false;
        }
        if !self.any_flag.is_empty() && !self.any_flag.iter().any(|f| call.flags.contains(f)) {
            return false;
        }
        for (index, matcher) in &self.args {
            if !matcher.matches(call.args.get(*index)) {
                return false;
            }
        }
        for (key, matcher) in &self.kwargs {
            if !matcher.matches(call.kwarg(key)) {
                return false;
            }
        }
        for any in &self.any_arg {
            if !call.all_args().any(|a| any.matches(Some(a))) {
                return false;
            }
        }
        if let Some(receiver) = &self.receiver
            && !receiver.matches(call.receiver.as_ref())
        {
            return false;
        }
        if let Some(from) = &self.pipe_from
            && !call.pipe_from.iter().any(|n| from.contains(n))
        {
            return false;
        }
        if let Some(to) = &self.pipe_to
            && !call.pipe_to.iter().any(|n| to.contains(n))
        {
            return false;
        }
        if let Some(via) = &self.via
            && !call.via.iter().any(|n| via.contains(n))
        {
            return false;
        }
        true
    }

    pub fn matches(&self, call: &Call) -> bool {
        self.names.contains(&call.name) && self.constraints_hold(call)
    }
}

#[derive(Debug, Clone)]
pub enum Pattern {
    Call(Box<CallPattern>),
    Import(NameSet),
    String {
        regex: Regex,
        formatted: Option<bool>,
    },
    Binding {
        kinds: Vec<BindingKind>,
        target: Regex,
        value: Box<ValueMatcher>,
    },
    Name(NameSet),
    /// Index of the query pattern group in the language's combined query.
    Query(usize),
    Text(Regex),
    All {
        all: Vec<Pattern>,
        none: Vec<Pattern>,
    },
    Any(Vec<Pattern>),
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub category: Category,
    pub severity: Level,
    pub confidence: Confidence,
    pub languages: Vec<Language>,
    pub action: String,
    pub explanation: String,
    pub references: Vec<String>,
    pub pattern: Pattern,
    pub examples: Examples,
    /// The file it came from, for error messages.
    pub file: String,
}

#[derive(Debug)]
struct Source {
    label: crate::facts::Taints,
    languages: Vec<Language>,
    pattern: Pattern,
}

#[derive(Debug)]
struct Embed {
    spec: EmbedSpec,
    names: NameSet,
}

/// Code found inside a call's arguments.
pub enum Embedded {
    Source(Language, String),
    /// An argument vector (`["rm", "-rf", path]`), shell only.
    Argv(Vec<Expr>),
}

/// One tree-sitter query per language made of every query rule's patterns, so the tree is walked
/// once however many structural rules there are.
pub struct CombinedQuery {
    pub query: tree_sitter::Query,
    /// Grammar ids of the node kinds the patterns start at; `None` when some pattern can start
    /// anywhere (a wildcard or an alternation at the top).
    pub root_kinds: Option<Vec<u16>>,
    /// For each pattern of the combined query, the index of the rule's query group.
    pub group_of_pattern: Vec<usize>,
}

impl std::fmt::Debug for CombinedQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CombinedQuery")
            .field("patterns", &self.group_of_pattern.len())
            .finish()
    }
}

/// A compiled rule set: rules, data-flow sources, embedding and wrapper declarations.
#[derive(Debug)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    pub version: String,
    pub labels: Vec<String>,
    sources: Vec<Source>,
    embeds: Vec<Embed>,
    wrappers: HashMap<String, WrapperSpec>,
    pub queries: HashMap<LanguageKey, CombinedQuery>,
    /// Top-level call rules by exact callee name, per language, and those with globs.
    pub call_index: HashMap<LanguageKey, CallIndex>,
    /// Top-level string rules of each language, tested together.
    pub string_index: HashMap<LanguageKey, StringIndex>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LanguageKey {
    Python,
    Bash,
}

impl From<Language> for LanguageKey {
    fn from(language: Language) -> LanguageKey {
        match language {
            Language::Python => LanguageKey::Python,
            Language::Bash => LanguageKey::Bash,
        }
    }
}

#[derive(Debug, Default)]
pub struct CallIndex {
    pub by_name: HashMap<String, Vec<usize>>,
    pub with_globs: Vec<usize>,
}

#[derive(Debug)]
pub struct StringIndex {
    pub set: RegexSet,
    pub rules: Vec<usize>,
}

impl RuleSet {
    /// Data-flow labels a call's result carries.
    pub fn call_labels(&self, language: Language, call: &Call) -> crate::facts::Taints {
        let mut labels = crate::facts::Taints::NONE;
        for source in &self.sources {
            if let Pattern::Call(pattern) = &source.pattern
                && source.languages.contains(&language)
                && pattern.matches(call)
            {
                labels = labels.union(source.label);
            }
        }
        labels
    }

    /// Data-flow labels of a module attribute used as a whole value (`os.environ`).
    pub fn name_labels(&self, language: Language, name: &str) -> crate::facts::Taints {
        let mut labels = crate::facts::Taints::NONE;
        for source in &self.sources {
            if let Pattern::Name(names) = &source.pattern
                && source.languages.contains(&language)
                && names.contains(name)
            {
                labels = labels.union(source.label);
            }
        }
        labels
    }

    pub fn embedded(&self, language: Language, call: &Call) -> Option<Embedded> {
        let embed = self
            .embeds
            .iter()
            .find(|e| e.spec.from == language && e.names.contains(&call.name))?;
        let spec = &embed.spec;
        let code: Option<&Expr> = if spec.all_args {
            let joined: Vec<String> = call
                .args
                .iter()
                .filter_map(|a| a.text())
                .map(|t| t.into_owned())
                .collect();
            return Some(Embedded::Source(spec.to, joined.join(" ")));
        } else if let Some(flag) = &spec.after_flag {
            let position = call.args.iter().position(|a| match &a.value {
                Value::Str(t) => t.starts_with('-') && !t.starts_with("--") && t[1..].contains(flag.as_str()),
                _ => false,
            })?;
            call.args.get(position + 1)
        } else {
            call.args
                .get(spec.arg.unwrap_or(0))
                .or_else(|| spec.kwarg.as_deref().and_then(|k| call.kwarg(k)))
        };
        let code = code?;
        match &code.value {
            Value::Str(s) | Value::Formatted(s) => Some(Embedded::Source(spec.to, s.clone())),
            Value::Seq(items) if spec.to == Language::Bash && !items.is_empty() => Some(Embedded::Argv(items.clone())),
            _ => None,
        }
    }

    pub fn wrapper(&self, command: &str) -> Option<&WrapperSpec> {
        self.wrappers.get(command)
    }

    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }

    /// Compiles rule files given as (file name, contents) pairs.
    pub fn compile(files: &[(String, String)]) -> Result<RuleSet, EngineError> {
        let mut parsed = Vec::new();
        let mut hasher = Sha256::new();
        let mut sorted: Vec<&(String, String)> = files.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, text) in sorted {
            hasher.update(name.as_bytes());
            hasher.update([0]);
            hasher.update(text.as_bytes());
            hasher.update([0]);
            let file: RuleFile = toml::from_str(text).map_err(|e| EngineError::RuleSyntax {
                file: name.clone(),
                message: e.to_string(),
            })?;
            parsed.push((name.clone(), file));
        }
        let version = format!("rules-{}", &hex::encode(hasher.finalize())[..12]);

        // Labels first: rules refer to them.
        let mut labels: Vec<String> = Vec::new();
        for (_, file) in &parsed {
            for source in &file.source {
                if !labels.contains(&source.label) {
                    labels.push(source.label.clone());
                }
            }
        }
        if labels.len() > 64 {
            return Err(EngineError::RuleInvalid {
                file: String::new(),
                rule: String::new(),
                message: format!("{} data-flow labels; at most 64 are supported", labels.len()),
            });
        }
        let mut compiler = Compiler {
            labels: &labels,
            query_sources: HashMap::new(),
        };

        let mut sources = Vec::new();
        let mut embeds = Vec::new();
        let mut wrappers = HashMap::new();
        let mut rules: Vec<Rule> = Vec::new();
        let mut seen: HashMap<String, String> = HashMap::new();
        for (file_name, file) in parsed {
            for spec in file.source {
                let invalid = |message: String| EngineError::RuleInvalid {
                    file: file_name.clone(),
                    rule: format!("source {}", spec.label),
                    message,
                };
                let pattern = compiler.pattern(&spec.pattern, &spec.languages).map_err(invalid)?;
                if !matches!(pattern, Pattern::Call(_) | Pattern::Name(_)) {
                    return Err(invalid("a source's match must be a `call` or a `name` pattern".into()));
                }
                let bit = labels.iter().position(|l| *l == spec.label).unwrap_or(0);
                sources.push(Source {
                    label: crate::facts::Taints(1 << bit),
                    languages: spec.languages,
                    pattern,
                });
            }
            for spec in file.embed {
                let names = NameSet::compile(&spec.call).map_err(|message| EngineError::RuleInvalid {
                    file: file_name.clone(),
                    rule: "embed".into(),
                    message,
                })?;
                embeds.push(Embed { spec, names });
            }
            for spec in file.wrapper {
                for name in &spec.name {
                    wrappers.insert(program_name(name), spec.clone());
                }
            }
            for spec in file.rule {
                if let Some(first_file) = seen.insert(spec.id.clone(), file_name.clone()) {
                    return Err(EngineError::DuplicateRule {
                        id: spec.id,
                        first_file,
                        second_file: file_name,
                    });
                }
                let invalid = |message: String| EngineError::RuleInvalid {
                    file: file_name.clone(),
                    rule: spec.id.clone(),
                    message,
                };
                if spec.languages.is_empty() {
                    return Err(invalid("`languages` is empty".into()));
                }
                if spec.explanation.trim().is_empty() {
                    return Err(invalid("`explanation` is empty".into()));
                }
                if spec.severity == Level::Blocked && spec.category != Category::MaliciousIntent {
                    return Err(invalid(
                        "BLOCKED is reserved for malicious_intent rules (and the threat list)".into(),
                    ));
                }
                if spec.examples.matching.is_empty() {
                    return Err(invalid("at least one `examples.match` is required".into()));
                }
                let pattern = compiler.pattern(&spec.pattern, &spec.languages).map_err(invalid)?;
                rules.push(Rule {
                    action: spec.action.clone().unwrap_or_else(|| spec.id.clone()),
                    id: spec.id,
                    category: spec.category,
                    severity: spec.severity,
                    confidence: spec.confidence,
                    languages: spec.languages,
                    explanation: spec.explanation.trim().to_string(),
                    references: spec.references,
                    pattern,
                    examples: spec.examples,
                    file: file_name.clone(),
                });
            }
        }
        if rules.is_empty() {
            return Err(EngineError::NoRules);
        }

        let queries = compiler.combined_queries()?;
        let mut call_index: HashMap<LanguageKey, CallIndex> = HashMap::new();
        let mut string_patterns: HashMap<LanguageKey, (Vec<String>, Vec<usize>)> = HashMap::new();
        for (i, rule) in rules.iter().enumerate() {
            for language in &rule.languages {
                match &rule.pattern {
                    Pattern::Call(call) => {
                        let index = call_index.entry((*language).into()).or_default();
                        for name in &call.names.exact {
                            index.by_name.entry(name.clone()).or_default().push(i);
                        }
                        if call.names.globs.is_some() {
                            index.with_globs.push(i);
                        }
                    }
                    Pattern::String { regex, .. } => {
                        let entry = string_patterns.entry((*language).into()).or_default();
                        entry.0.push(regex.as_str().to_string());
                        entry.1.push(i);
                    }
                    _ => {}
                }
            }
        }
        let mut string_index = HashMap::new();
        for (language, (patterns, rule_indices)) in string_patterns {
            let set = RegexSet::new(&patterns).map_err(|e| EngineError::RuleInvalid {
                file: String::new(),
                rule: String::new(),
                message: format!("string patterns do not combine: {e}"),
            })?;
            string_index.insert(
                language,
                StringIndex {
                    set,
                    rules: rule_indices,
                },
            );
        }

        Ok(RuleSet {
            rules,
            version,
            labels,
            sources,
            embeds,
            wrappers,
            queries,
            call_index,
            string_index,
        })
    }
}

/// The node kind each top-level pattern of a query starts with (`(assert_statement) @m` gives
/// `assert_statement`); `None` when a pattern starts with a wildcard, an alternation or a string.
fn pattern_roots(source: &str) -> Option<Vec<String>> {
    let mut roots = Vec::new();
    let mut depth = 0usize;
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ';' => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        break;
                    }
                }
            }
            '"' => {
                if depth == 0 {
                    return None;
                }
                let mut escaped = false;
                for inner in chars.by_ref() {
                    if inner == '"' && !escaped {
                        break;
                    }
                    escaped = inner == '\\' && !escaped;
                }
            }
            '(' => {
                if depth == 0 {
                    let name: String =
                        std::iter::from_fn(|| chars.next_if(|c| c.is_alphanumeric() || *c == '_')).collect();
                    if name.is_empty() || name == "_" {
                        return None;
                    }
                    roots.push(name);
                }
                depth += 1;
            }
            ')' => depth = depth.saturating_sub(1),
            '[' if depth == 0 => return None,
            _ => {}
        }
    }
    Some(roots)
}

struct Compiler<'l> {
    labels: &'l [String],
    /// Per language, the source of each query group, in order; `Pattern::Query` holds the index.
    query_sources: HashMap<LanguageKey, Vec<String>>,
}

impl Compiler<'_> {
    fn labels(&self, names: &[String]) -> Result<crate::facts::Taints, String> {
        let mut taints = crate::facts::Taints::NONE;
        for name in names {
            let Some(bit) = self.labels.iter().position(|l| l == name) else {
                return Err(format!(
                    "label {name:?} is produced by no `[[source]]` (known: {})",
                    self.labels.join(", ")
                ));
            };
            taints = taints.union(crate::facts::Taints(1 << bit));
        }
        Ok(taints)
    }

    fn regex(pattern: &str) -> Result<Regex, String> {
        Regex::new(pattern).map_err(|e| format!("regular expression {pattern:?}: {e}"))
    }

    fn pattern(&mut self, spec: &PatternSpec, languages: &[Language]) -> Result<Pattern, String> {
        let subjects = [
            spec.call.is_some(),
            spec.import.is_some(),
            spec.string.is_some(),
            spec.binding.is_some(),
            spec.name.is_some(),
            spec.query.is_some(),
            spec.text.is_some(),
            spec.all.is_some(),
            spec.any.is_some(),
        ];
        if subjects.iter().filter(|s| **s).count() != 1 {
            return Err(
                "a pattern needs exactly one of call, import, string, binding, name, query, text, all, any".into(),
            );
        }
        let call_constraints = !spec.not_call.is_empty()
            || !spec.args.is_empty()
            || !spec.kwargs.is_empty()
            || spec.any_arg.is_some()
            || spec.receiver.is_some()
            || !spec.flags.is_empty()
            || !spec.any_flag.is_empty()
            || !spec.tainted.is_empty()
            || !spec.pipe_from.is_empty()
            || !spec.pipe_to.is_empty()
            || !spec.via.is_empty();
        if call_constraints && spec.call.is_none() {
            return Err("argument, flag, pipe and taint constraints apply to `call` patterns only".into());
        }
        if spec.formatted.is_some() && spec.string.is_none() {
            return Err("`formatted` applies to `string` patterns only".into());
        }
        if !spec.none.is_empty() && spec.all.is_none() {
            return Err("`none` applies to `all` patterns only".into());
        }
        if let Some(names) = &spec.call {
            let optional_set = |names: &[String]| -> Result<Option<NameSet>, String> {
                if names.is_empty() {
                    Ok(None)
                } else {
                    NameSet::compile(names).map(Some)
                }
            };
            let mut args = Vec::new();
            for (index, value) in &spec.args {
                let index: usize = index
                    .parse()
                    .map_err(|_| format!("argument index {index:?} is not a number"))?;
                args.push((index, self.value(value)?));
            }
            let mut kwargs = Vec::new();
            for (key, value) in &spec.kwargs {
                kwargs.push((key.clone(), self.value(value)?));
            }
            return Ok(Pattern::Call(Box::new(CallPattern {
                names: NameSet::compile(names)?,
                not_names: NameSet::compile(&spec.not_call)?,
                args,
                kwargs,
                any_arg: spec
                    .any_arg
                    .as_ref()
                    .map_or(&[][..], OneOrMany::as_slice)
                    .iter()
                    .map(|v| self.value(v))
                    .collect::<Result<Vec<_>, _>>()?,
                receiver: spec.receiver.as_ref().map(|v| self.value(v)).transpose()?,
                flags: spec.flags.clone(),
                any_flag: spec.any_flag.clone(),
                tainted: if spec.tainted.is_empty() {
                    None
                } else {
                    Some(self.labels(&spec.tainted)?)
                },
                pipe_from: optional_set(&spec.pipe_from)?,
                pipe_to: optional_set(&spec.pipe_to)?,
                via: optional_set(&spec.via)?,
            })));
        }
        if let Some(names) = &spec.import {
            return Ok(Pattern::Import(NameSet::compile(names)?));
        }
        if let Some(regex) = &spec.string {
            return Ok(Pattern::String {
                regex: Self::regex(regex)?,
                formatted: spec.formatted,
            });
        }
        if let Some(binding) = &spec.binding {
            return Ok(Pattern::Binding {
                kinds: binding.kinds.clone(),
                target: Self::regex(&binding.target)?,
                value: Box::new(self.value(&binding.value)?),
            });
        }
        if let Some(names) = &spec.name {
            return Ok(Pattern::Name(NameSet::compile(names)?));
        }
        if let Some(query) = &spec.query {
            let [language] = languages else {
                return Err("a `query` rule must have exactly one language".into());
            };
            // Validate alone first, for an error message that names this rule.
            let compiled = tree_sitter::Query::new(&crate::extract::grammar(*language), query)
                .map_err(|e| format!("tree-sitter query: {e}"))?;
            if compiled.capture_names().is_empty() {
                return Err("a `query` needs at least one capture (such as @match) to place the finding".into());
            }
            let sources = self.query_sources.entry((*language).into()).or_default();
            let index = sources.len();
            sources.push(query.clone());
            return Ok(Pattern::Query(index));
        }
        if let Some(text) = &spec.text {
            return Ok(Pattern::Text(Self::regex(text)?));
        }
        if let Some(all) = &spec.all {
            if all.is_empty() {
                return Err("`all` is empty".into());
            }
            let all = all
                .iter()
                .map(|p| self.pattern(p, languages))
                .collect::<Result<Vec<_>, _>>()?;
            let none = spec
                .none
                .iter()
                .map(|p| self.pattern(p, languages))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Pattern::All { all, none });
        }
        if let Some(any) = &spec.any {
            if any.is_empty() {
                return Err("`any` is empty".into());
            }
            let any = any
                .iter()
                .map(|p| self.pattern(p, languages))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Pattern::Any(any));
        }
        Err("empty pattern".into())
    }

    fn value(&self, spec: &ValueSpec) -> Result<ValueMatcher, String> {
        let boxed = |v: &Option<Box<ValueSpec>>| -> Result<Option<Box<ValueMatcher>>, String> {
            v.as_ref().map(|s| self.value(s).map(Box::new)).transpose()
        };
        Ok(ValueMatcher {
            present: spec.present,
            regex: spec.regex.as_deref().map(Self::regex).transpose()?,
            equals: spec.equals.clone(),
            kind: spec.kind.clone(),
            truthy: spec.truthy,
            int_lt: spec.int_lt,
            int_ge: spec.int_ge,
            int_bits: spec.int_bits,
            name: spec.name.as_deref().map(NameSet::compile).transpose()?,
            tainted: spec.tainted.as_deref().map(|l| self.labels(l)).transpose()?,
            element: boxed(&spec.element)?,
            first: boxed(&spec.first)?,
            not: boxed(&spec.not)?,
            any_of: spec
                .any_of
                .as_ref()
                .map(|list| list.iter().map(|s| self.value(s)).collect::<Result<Vec<_>, _>>())
                .transpose()?,
        })
    }

    fn combined_queries(&self) -> Result<HashMap<LanguageKey, CombinedQuery>, EngineError> {
        let mut combined = HashMap::new();
        for (key, sources) in &self.query_sources {
            let language = match key {
                LanguageKey::Python => Language::Python,
                LanguageKey::Bash => Language::Bash,
            };
            let grammar = crate::extract::grammar(language);
            let mut group_of_pattern = Vec::new();
            for (group, source) in sources.iter().enumerate() {
                // Each group was compiled alone before, so this cannot fail; its count of
                // patterns maps the combined query's pattern indices back to groups.
                let alone = tree_sitter::Query::new(&grammar, source).map_err(|e| EngineError::RuleInvalid {
                    file: String::new(),
                    rule: String::new(),
                    message: format!("tree-sitter query: {e}"),
                })?;
                group_of_pattern.extend(std::iter::repeat_n(group, alone.pattern_count()));
            }
            let query =
                tree_sitter::Query::new(&grammar, &sources.join("\n")).map_err(|e| EngineError::RuleInvalid {
                    file: String::new(),
                    rule: String::new(),
                    message: format!("tree-sitter queries do not combine: {e}"),
                })?;
            let mut root_kinds = Some(Vec::new());
            for source in sources {
                match pattern_roots(source) {
                    Some(names) => {
                        for name in names {
                            let id = grammar.id_for_node_kind(&name, true);
                            if let (Some(kinds), true) = (root_kinds.as_mut(), id != 0) {
                                kinds.push(id);
                            } else {
                                root_kinds = None;
                            }
                        }
                    }
                    None => root_kinds = None,
                }
            }
            combined.insert(
                *key,
                CombinedQuery {
                    query,
                    root_kinds,
                    group_of_pattern,
                },
            );
        }
        Ok(combined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_roots_are_read_from_the_query_text() {
        assert_eq!(
            pattern_roots("(assert_statement) @m"),
            Some(vec!["assert_statement".to_string()])
        );
        assert_eq!(
            pattern_roots("; comment (x)\n(a (b)) @m\n(c \"(\" @s)"),
            Some(vec!["a".to_string(), "c".to_string()])
        );
        assert_eq!(pattern_roots("(_ (b)) @m"), None);
        assert_eq!(pattern_roots("[(a) (b)] @m"), None);
    }
}
