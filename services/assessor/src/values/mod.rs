//! Matching one value: regular expressions (checked when the rules load, tested with a DFA built
//! ahead of time or compiled the first time they are needed), names with shell-style globs, and
//! the constraints a rule or the tool table puts on a value. Below both the rules and the tool
//! table, which match values the same way.

mod automata;
mod expression;

use crate::error::RegexError;
use crate::facts::{Expr, Value};
use automata::Prebuilt;
use expression::parse_regex;
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::{MatchKind, meta};
use regex_syntax::hir::Hir;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Deserialize;
use std::sync::OnceLock;

/// How every rule expression is compiled (read as [`parse_regex`] reads it). Built without the
/// literal prefilter, which cost more to build than the short strings it would speed up, an
/// expression compiles three to four times faster.
pub(crate) fn compile_regexes<P: AsRef<str>>(patterns: &[P], kind: MatchKind) -> Result<meta::Regex, RegexError> {
    let hirs: Vec<Hir> = patterns.iter().map(|p| parse(p.as_ref())).collect::<Result<_, _>>()?;
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .match_kind(kind)
                .auto_prefilter(false)
                .which_captures(WhichCaptures::Implicit),
        )
        .build_many_from_hir(&hirs)
        .map_err(|e| RegexError::Compile(Box::new(e)))
}

/// A rule's expression read as [`parse_regex`] reads it, the error saying which it was.
fn parse(pattern: &str) -> Result<Hir, RegexError> {
    parse_regex(pattern).map_err(|source| RegexError::Syntax {
        pattern: pattern.to_string(),
        source,
    })
}

/// A regular expression checked when the rules load and compiled the first time it is used: a
/// fresh `airlock assess` compiles only what the file in front of it needs (compiling every
/// rule's expressions up front took most of a fresh process's time). A built-in expression is
/// first tested with the DFA built for it ahead of time, which needs no compiling at all; the
/// regex is compiled only to say where a `text` rule matched.
#[derive(Debug, Clone)]
pub struct LazyRegex {
    pattern: String,
    prebuilt: OnceLock<Option<Box<Prebuilt>>>,
    compiled: OnceLock<Option<meta::Regex>>,
}

impl LazyRegex {
    /// Checks the syntax now, as it will be compiled; the (much costlier) compilation waits.
    pub fn new(pattern: &str) -> Result<LazyRegex, RegexError> {
        parse(pattern)?;
        Ok(LazyRegex::trusted(pattern))
    }

    /// A pattern known to be valid (built by the engine, or from rule files checked when the
    /// binary was built): not even its syntax is checked now.
    pub fn trusted(pattern: &str) -> LazyRegex {
        LazyRegex {
            pattern: pattern.to_string(),
            prebuilt: OnceLock::new(),
            compiled: OnceLock::new(),
        }
    }

    /// Compiles now, for a loader that must refuse what would fail later (size limits).
    pub fn prepare(&self) -> Result<(), String> {
        match self.get() {
            Some(_) => Ok(()),
            None => Err(format!("regular expression {:?} does not compile", self.pattern)),
        }
    }

    fn get(&self) -> Option<&meta::Regex> {
        self.compiled
            .get_or_init(|| match compile_regexes(&[&self.pattern], MatchKind::LeftmostFirst) {
                Ok(regex) => Some(regex),
                Err(error) => {
                    tracing::error!(pattern = %self.pattern, %error, "a rule's regular expression does not compile; it matches nothing");
                    None
                }
            })
            .as_ref()
    }

    /// What the prebuilt DFA says about `text`, when there is one.
    fn prebuilt_match(&self, text: &str) -> Option<bool> {
        self.prebuilt
            .get_or_init(|| Prebuilt::for_expression(&self.pattern).map(Box::new))
            .as_ref()?
            .is_match(text)
    }

    pub fn is_match(&self, text: &str) -> bool {
        if let Some(found) = self.prebuilt_match(text) {
            #[cfg(test)]
            tests::record(&tests::PREBUILT_HERE, &self.pattern);
            return found;
        }
        #[cfg(test)]
        tests::record(&tests::COMPILED_HERE, &self.pattern);
        self.get().is_some_and(|r| r.is_match(text.as_bytes()))
    }

    /// Byte ranges of the matches in `text`, at most `limit` of them. A match of bytes inside
    /// a character is widened to the whole character.
    pub fn find_ranges(&self, text: &str, limit: usize) -> Vec<(usize, usize)> {
        if self.prebuilt_match(text) == Some(false) {
            return Vec::new();
        }
        let Some(regex) = self.get() else {
            return Vec::new();
        };
        regex
            .find_iter(text.as_bytes())
            .take(limit)
            .map(|m| (floor_char_boundary(text, m.start()), ceil_char_boundary(text, m.end())))
            .collect()
    }

    pub fn as_str(&self) -> &str {
        &self.pattern
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Names with `*` globs: plain names are a hash lookup, globs are matched piece by piece (a
/// regular expression per set cost more to compile than all the matching a request does).
#[derive(Debug, Clone, Default)]
pub struct NameSet {
    pub(crate) exact: HashSet<String>,
    /// Each glob split at its `*`s.
    pub(crate) globs: Vec<Vec<String>>,
}

impl NameSet {
    pub(crate) fn compile(names: &[String]) -> Result<NameSet, String> {
        let mut set = NameSet::default();
        for name in names {
            if name.contains('*') {
                set.globs.push(name.split('*').map(str::to_string).collect());
            } else {
                set.exact.insert(name.clone());
            }
        }
        Ok(set)
    }

    pub fn has_globs(&self) -> bool {
        !self.globs.is_empty()
    }

    /// The names without globs.
    pub fn exact_names(&self) -> impl Iterator<Item = &str> {
        self.exact.iter().map(String::as_str)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.exact.contains(name) || self.globs.iter().any(|pieces| glob_matches(pieces, name))
    }
}

/// `pieces` is a pattern split at `*`: the first piece starts the text, the last ends it, and
/// the others appear in order between.
fn glob_matches(pieces: &[String], text: &str) -> bool {
    let [first, middle @ .., last] = pieces else {
        return pieces.first().is_some_and(|only| only == text);
    };
    if text.len() < first.len() + last.len() || !text.starts_with(first.as_str()) || !text.ends_with(last.as_str()) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for piece in middle {
        match rest.find(piece.as_str()) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// What sort of value a rule wants (`kind = ["str", "int"]`).
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

#[derive(Debug, Clone)]
pub struct ValueMatcher {
    pub(crate) present: Option<bool>,
    pub(crate) regex: Option<LazyRegex>,
    pub(crate) equals: Option<Vec<String>>,
    pub(crate) kind: Option<Vec<ValueKind>>,
    pub(crate) truthy: Option<bool>,
    pub(crate) int_lt: Option<i64>,
    pub(crate) int_ge: Option<i64>,
    pub(crate) int_bits: Option<i64>,
    pub(crate) name: Option<NameSet>,
    pub(crate) tainted: Option<crate::facts::Taints>,
    pub(crate) element: Option<Box<ValueMatcher>>,
    pub(crate) first: Option<Box<ValueMatcher>>,
    pub(crate) not: Option<Box<ValueMatcher>>,
    pub(crate) any_of: Option<Vec<ValueMatcher>>,
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

#[cfg(test)]
pub(crate) mod tests {
    use super::{LazyRegex, NameSet};
    use crate::rules::StringIndex;
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    thread_local! {
        /// The expressions this thread tested with a prebuilt DFA, and those it had to compile.
        pub(super) static PREBUILT_HERE: RefCell<BTreeSet<String>> = RefCell::default();
        pub(super) static COMPILED_HERE: RefCell<BTreeSet<String>> = RefCell::default();
    }

    pub(super) fn record(which: &'static std::thread::LocalKey<RefCell<BTreeSet<String>>>, pattern: &str) {
        which.with(|set| set.borrow_mut().insert(pattern.to_string()));
    }

    /// Every file of the labelled corpus, as (language, text).
    pub(crate) fn corpus_files() -> Vec<(airlock_protocol::request::Language, String)> {
        use airlock_protocol::request::Language;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/assessor-corpus");
        let mut pending = vec![root];
        let mut files = Vec::new();
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).expect("the corpus is readable") {
                let path = entry.expect("the corpus is readable").path();
                let language = match path.extension().and_then(|e| e.to_str()) {
                    Some("py") => Language::Python,
                    Some("sh") => Language::Bash,
                    _ if path.is_dir() => {
                        pending.push(path);
                        continue;
                    }
                    _ => continue,
                };
                files.push((language, std::fs::read_to_string(&path).expect("a corpus file is text")));
            }
        }
        files
    }

    #[test]
    fn built_in_expressions_are_tested_without_compiling() {
        use crate::values::automata::NOT_PREBUILT;
        // Only the expressions whose DFA would be too large are compiled at run time.
        assert!(
            NOT_PREBUILT.iter().all(|(_, reason)| reason.contains("size limit")) && NOT_PREBUILT.len() <= 4,
            "{NOT_PREBUILT:#?}"
        );
        let engine = crate::Engine::builtin().unwrap();
        let files = corpus_files();
        assert!(files.len() > 100, "{} corpus files", files.len());
        for (language, text) in &files {
            engine.assess(text.as_bytes(), *language, airlock_protocol::request::Origin::External);
        }
        let prebuilt = PREBUILT_HERE.with(|set| set.borrow().clone());
        let compiled = COMPILED_HERE.with(|set| set.borrow().clone());
        // The engine assessed on this thread, through the prebuilt DFAs.
        assert!(
            prebuilt.len() > 40,
            "only {} expressions used a prebuilt DFA",
            prebuilt.len()
        );
        let unexpected: Vec<_> = compiled
            .iter()
            .filter(|p| !NOT_PREBUILT.iter().any(|(known, _)| known == p))
            .collect();
        assert!(
            unexpected.is_empty(),
            "built-in expressions compiled at run time (is build.rs's EXPRESSION_KEYS missing a key?): {unexpected:#?}"
        );
    }

    #[test]
    fn globs_match_like_the_shell() {
        let set = NameSet::compile(&[
            "os.exec*".into(),
            "*.send".into(),
            "base64.*decode*".into(),
            "open".into(),
        ])
        .unwrap();
        for yes in [
            "os.execvp",
            "os.exec",
            "socket.socket.send",
            "base64.b64decode",
            "base64.urlsafe_b64decode_x",
            "open",
        ] {
            assert!(set.contains(yes), "{yes}");
        }
        for no in [
            "os.system",
            "socket.socket.sendall",
            "base64.b64encode",
            "xbase64.decode",
            "opener",
        ] {
            assert!(!set.contains(no), "{no}");
        }
        let star = NameSet::compile(&["*".into()]).unwrap();
        assert!(star.contains("") && star.contains("anything"));
    }

    #[test]
    fn expressions_are_ascii_unless_they_name_other_characters() {
        let ascii = LazyRegex::new(r"(?i)curl\s+-d\b").unwrap();
        assert!(ascii.is_match("CURL  -d @/etc/shadow"));
        // ASCII classes: a no-break space is not `\s`.
        assert!(!ascii.is_match("curl\u{a0}-d"));
        let bidi = LazyRegex::new(r"[\x{202A}-\x{202E}\x{2066}-\x{2069}]").unwrap();
        assert!(bidi.is_match("access_level = 'user\u{202E} \u{2066}// admin'"));
        assert!(!bidi.is_match("plain text"));
        assert!(LazyRegex::new(r"(unclosed").is_err());
    }

    #[test]
    fn matches_inside_a_character_widen_to_the_whole_character() {
        // `.` is one byte: a match may start or end inside a multi-byte character.
        let regex = LazyRegex::new(r"a.").unwrap();
        let text = "xaé!";
        assert_eq!(regex.find_ranges(text, 10), vec![(1, 4)]);
        assert!(text.get(1..4).is_some());
    }

    #[test]
    fn a_string_index_names_every_rule_whose_expression_matches() {
        let index = StringIndex::new(vec!["^/tmp".into(), "tmp/x$".into(), "^/etc".into()], vec![7, 8, 9]);
        assert_eq!(index.matching("/tmp/x"), vec![7, 8]);
        assert!(index.matching("/home").is_empty());
    }
}

/// Entries (rules, sources, API descriptions) by the call names they match: exact names, globs
/// whose end is a literal last name part (`*.upload_file`: tried only for calls whose last part
/// is `upload_file`), and other globs (`subprocess.*`, tried for every call).
#[derive(Debug, Default)]
pub struct CallIndex {
    pub by_name: HashMap<String, Vec<usize>>,
    by_last_part: HashMap<String, Vec<usize>>,
    with_globs: Vec<usize>,
}

impl CallIndex {
    /// Files entry `i` under each exact name it is called by, and under its globs.
    pub(crate) fn add(&mut self, names: &NameSet, i: usize) {
        for name in &names.exact {
            self.by_name.entry(name.clone()).or_default().push(i);
        }
        if !names.has_globs() {
            return;
        }
        let last_parts: Option<Vec<&str>> = names.globs.iter().map(|pieces| glob_last_part(pieces)).collect();
        match last_parts {
            Some(mut parts) => {
                parts.sort_unstable();
                parts.dedup();
                for part in parts {
                    self.by_last_part.entry(part.to_string()).or_default().push(i);
                }
            }
            None => self.with_globs.push(i),
        }
    }

    /// The entries that may match a call named `name`, in the order they were added (exact
    /// names first, then globs).
    pub fn candidates<'a>(&'a self, name: &str) -> impl Iterator<Item = usize> + 'a {
        let exact = self.by_name.get(name).map(Vec::as_slice).unwrap_or_default();
        let last_part = name.rsplit('.').next().unwrap_or(name);
        let keyed = self.by_last_part.get(last_part).map(Vec::as_slice).unwrap_or_default();
        exact.iter().copied().chain(merge_sorted(keyed, &self.with_globs))
    }
}

/// The literal last name part every name a glob matches ends with (`upload_file` of
/// `*.upload_file`), if the glob ends with one.
fn glob_last_part(pieces: &[String]) -> Option<&str> {
    let last = pieces.last()?;
    let (_, part) = last.rsplit_once('.')?;
    (!part.is_empty()).then_some(part)
}

/// Two ascending lists of indices as one ascending sequence.
fn merge_sorted<'a>(a: &'a [usize], b: &'a [usize]) -> impl Iterator<Item = usize> + 'a {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        let next = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x <= y => {
                i += 1;
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, None) => return None,
        };
        Some(next)
    })
}
