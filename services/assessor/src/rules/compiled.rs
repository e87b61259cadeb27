//! A compiled rule set: the form rules are matched in.

use super::spec::{EmbedSpec, Examples, WrapperSpec};
use crate::facts::{BindingKind, Call, Expr, Value};
use crate::values::{LazyRegex, NameSet, ValueMatcher, compile_regexes};
use airlock_protocol::assessment::{Category, Confidence, Level};
use airlock_protocol::request::Language;
use regex_automata::{MatchKind, PatternSet, meta};
use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

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
    pub no_flag: Vec<String>,
    pub tainted: Option<crate::facts::Taints>,
    pub pipe_from: Option<NameSet>,
    pub pipe_to: Option<NameSet>,
    pub via: Option<NameSet>,
    pub not_via: Option<NameSet>,
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
        if !self.flags.iter().all(|f| call.has_flag(f)) {
            return false;
        }
        if !self.any_flag.is_empty() && !self.any_flag.iter().any(|f| call.has_flag(f)) {
            return false;
        }
        if self.no_flag.iter().any(|f| call.has_flag(f)) {
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
        if let Some(not_via) = &self.not_via
            && call.via.iter().any(|n| not_via.contains(n))
        {
            return false;
        }
        true
    }

    pub fn matches(&self, call: &Call) -> bool {
        self.names.contains(&call.name) && self.constraints_hold(call)
    }

    /// The path taken by the value that made this call match: a tainted argument for a taint
    /// constraint, else the argument a value constraint is about, else any argument with one.
    pub fn trail(&self, call: &Call) -> Option<String> {
        let values = || call.all_args().chain(call.receiver.iter());
        let chosen = if let Some(labels) = self.tainted {
            values().find(|v| v.trail.is_some() && v.taints.intersects(labels))
        } else {
            None
        };
        let chosen = chosen
            .or_else(|| {
                self.args
                    .iter()
                    .filter_map(|(i, _)| call.args.get(*i))
                    .find(|v| v.trail.is_some())
            })
            .or_else(|| values().find(|v| v.trail.is_some() && self.any_arg.iter().any(|m| m.matches(Some(v)))))
            .or_else(|| values().find(|v| v.trail.is_some() && !v.taints.is_empty()))
            .or_else(|| values().find(|v| v.trail.is_some()))?;
        let trail = chosen.trail.as_ref()?;
        (trail.steps.len() > 1).then(|| trail.render())
    }
}

#[derive(Debug, Clone)]
pub enum Pattern {
    Call(Box<CallPattern>),
    Import(NameSet),
    String {
        regex: LazyRegex,
        formatted: Option<bool>,
        /// For a string pattern inside a combination: its slot in `RuleSet::nested_strings`.
        slot: Option<usize>,
    },
    Binding {
        kinds: Vec<BindingKind>,
        target: LazyRegex,
        value: Box<ValueMatcher>,
    },
    Name(NameSet),
    /// Index of the query pattern group in the language's combined query.
    Query(usize),
    Text(LazyRegex),
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
    /// See `RuleSpec::fails_closed`.
    pub fails_closed: bool,
    pub pattern: Pattern,
    pub examples: Examples,
    pub more_examples: Vec<Examples>,
    /// The file it came from, for error messages.
    pub file: String,
}

#[derive(Debug)]
pub(crate) struct Source {
    pub(crate) label: crate::facts::Taints,
    pub(crate) languages: Vec<Language>,
    pub(crate) pattern: Pattern,
}

#[derive(Debug)]
pub(crate) struct Embed {
    pub(crate) spec: EmbedSpec,
    pub(crate) names: NameSet,
}

/// Code found inside a call's arguments.
pub enum Embedded {
    Source(Language, String),
    /// Code known only when the program runs (read from input, a file, the network, built from
    /// values the analysis cannot resolve): nothing to analyse, and that is a finding. The value
    /// is kept for the labels it carries.
    Opaque(Language, Expr),
    /// An argument vector (`["rm", "-rf", path]`), shell only.
    Argv(Vec<Expr>),
    /// Code built at run time around known text: the text is read, and the value (for its
    /// holes) is code the analysis cannot follow.
    Partial(Language, String, Expr),
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
    pub(crate) sources: Vec<Source>,
    /// Call sources by exact callee name, and those with globs.
    pub(crate) source_index: HashMap<LanguageKey, crate::values::CallIndex>,
    /// Sources that only test a call's first argument against an expression, per language
    /// and callee name, tested together (`StringIndex::rules` are indices in `sources`).
    pub(crate) source_sets: HashMap<LanguageKey, HashMap<String, StringIndex>>,
    pub(crate) embeds: Vec<Embed>,
    pub(crate) wrappers: HashMap<String, WrapperSpec>,
    /// The tool table and the Python call table: what commands and calls do.
    pub effects: crate::effects::EffectTables,
    pub queries: HashMap<LanguageKey, CombinedQuery>,
    /// Top-level call rules by exact callee name, per language, and those with globs.
    pub call_index: HashMap<LanguageKey, crate::values::CallIndex>,
    /// Top-level string rules of each language, tested together.
    pub string_index: HashMap<LanguageKey, StringIndex>,
    /// The expression of each slot of the string patterns inside combinations (`any`, `all`):
    /// one per distinct expression, so one used by several rules is tested once per string,
    /// and only when a combination gets that far.
    pub nested_strings: Vec<LazyRegex>,
}

impl RuleSet {
    /// The bit of a data-flow label (`downloaded`, ...); none when no source produces it.
    pub fn label(&self, name: &str) -> crate::facts::Taints {
        self.labels
            .iter()
            .position(|l| l == name)
            .map_or(crate::facts::Taints::NONE, |bit| crate::facts::Taints(1 << bit))
    }
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

#[derive(Debug)]
pub struct StringIndex {
    patterns: Vec<String>,
    set: OnceLock<Option<meta::Regex>>,
    pub rules: Vec<usize>,
}

impl StringIndex {
    pub fn new(patterns: Vec<String>, rules: Vec<usize>) -> StringIndex {
        StringIndex {
            patterns,
            set: OnceLock::new(),
            rules,
        }
    }

    /// The string rules of a language tested together (compiled at first use): the index in
    /// `rules` of each one that matches `text`.
    pub fn matching(&self, text: &str) -> Vec<usize> {
        let set = self
            .set
            .get_or_init(|| match compile_regexes(&self.patterns, MatchKind::All) {
                Ok(set) => Some(set),
                Err(error) => {
                    tracing::error!(%error, "string rules do not combine; they match nothing");
                    None
                }
            });
        let Some(set) = set else {
            return Vec::new();
        };
        // Most strings match nothing: the cheap test first.
        if !set.is_match(text.as_bytes()) {
            return Vec::new();
        }
        let mut which = PatternSet::new(set.pattern_len());
        set.which_overlapping_matches(&regex_automata::Input::new(text.as_bytes()), &mut which);
        which
            .iter()
            .filter_map(|p| self.rules.get(p.as_usize()).copied())
            .collect()
    }
}

impl RuleSet {
    /// Data-flow labels a call's result carries.
    pub fn call_labels(&self, language: Language, call: &Call) -> crate::facts::Taints {
        let mut labels = crate::facts::Taints::NONE;
        let index = self.source_index.get(&LanguageKey::from(language));
        for source in index
            .into_iter()
            .flat_map(|index| index.candidates(&call.name))
            .map(|i| &self.sources[i])
        {
            if let Pattern::Call(pattern) = &source.pattern
                && source.languages.contains(&language)
                && pattern.matches(call)
            {
                labels = labels.union(source.label);
            }
        }
        // As `ValueMatcher` reads a value for a regex: a string, a path, formatted text or a
        // sequence, by its text.
        if let Some(set) = self
            .source_sets
            .get(&LanguageKey::from(language))
            .and_then(|by_name| by_name.get(call.name.as_str()))
            && let Some(first) = call.args.first()
            && matches!(
                first.value,
                Value::Str(_) | Value::Path(_) | Value::Formatted(_) | Value::Seq(_)
            )
            && let Some(text) = first.text()
        {
            for i in set.matching(&text) {
                if let Some(source) = self.sources.get(i) {
                    labels = labels.union(source.label);
                }
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
        } else if spec.argv_args {
            return (!call.args.is_empty()).then(|| Embedded::Argv(call.args.clone()));
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
            // A command whose program is a hole (`os.system(f"{tool} --run")`, `sys.argv[1]`, an
            // environment variable) is not known.
            Value::Formatted(s) if spec.from == Language::Python && s.trim_start().starts_with(['{', '$']) => {
                Some(Embedded::Opaque(spec.to, code.clone()))
            }
            // `python3 -c "$CODE"`, `bash -c "$1"`: the code is a variable's value, nothing more.
            Value::Formatted(s) if spec.from == Language::Bash && is_expansion(s) => {
                Some(Embedded::Opaque(spec.to, code.clone()))
            }
            // Only the placeholder `xargs -I{}` or `find -exec` fills in: each input line is the code.
            Value::Str(s) if s.trim() == "{}" => Some(Embedded::Opaque(spec.to, code.clone())),
            // Python code with holes (`exec(template.format(m=sys.argv[1]))`, an f-string):
            // what is known of it is read, and what fills the holes is decided at run time.
            Value::Formatted(s) if spec.from == Language::Python && spec.to == Language::Python => {
                Some(Embedded::Partial(spec.to, s.clone(), code.clone()))
            }
            Value::Str(s) | Value::Formatted(s) => Some(Embedded::Source(spec.to, s.clone())),
            Value::Seq(items) if spec.to == Language::Bash && !items.is_empty() => Some(Embedded::Argv(items.clone())),
            Value::Seq(_) | Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) => None,
            Value::Name(_) | Value::Call(_) | Value::Other | Value::Path(_) => {
                Some(Embedded::Opaque(spec.to, code.clone()))
            }
        }
    }

    pub fn wrapper(&self, command: &str) -> Option<&WrapperSpec> {
        self.wrappers.get(command)
    }

    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }
}

/// A shell word that is one expansion and nothing else (`$CODE`, `${1}`, `"$@"`).
fn is_expansion(text: &str) -> bool {
    let inner = text.trim();
    let name = inner
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .or_else(|| inner.strip_prefix('$'));
    name.is_some_and(|n| {
        !n.is_empty() && (n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || n == "@" || n == "*")
    })
}
