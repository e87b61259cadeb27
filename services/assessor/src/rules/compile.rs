//! Compiling rule files into a [`RuleSet`]: parsing, checking and indexing.

use super::compiled::*;
use super::spec::*;
use crate::error::{EngineError, RegexError};
use crate::values::*;
use airlock_protocol::request::Language;

use rustc_hash::FxHashMap as HashMap;
use sha2::{Digest, Sha256};

impl RuleSet {
    /// Compiles rule files given as (file name, TOML text) pairs, checking every regular
    /// expression's syntax now (each is compiled at its first use).
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
        Self::from_parsed(parsed, version, true)
    }

    /// Compiles the rule files built into the binary: (file name, TOML text, the same file as
    /// JSON, converted by the build script). JSON reads several times faster than TOML, and the
    /// files' expressions were checked by the tests, so a fresh process starts in milliseconds.
    /// `version` is what [`RuleSet::compile`] gives for the TOML files (build.rs computes it).
    pub fn compile_prebuilt(files: &[(&str, &str, &str)], version: &str) -> Result<RuleSet, EngineError> {
        let mut parsed = Vec::new();
        for (name, _, json) in files {
            let file: RuleFile = serde_json::from_str(json).map_err(|e| EngineError::RuleSyntax {
                file: name.to_string(),
                message: e.to_string(),
            })?;
            parsed.push((name.to_string(), file));
        }
        parsed.sort_by(|a, b| a.0.cmp(&b.0));
        Self::from_parsed(parsed, version.to_string(), false)
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

/// Why an entry of a rule file is refused: what is wrong with it, or the regular expression that
/// cannot be used (kept whole, with its source).
#[derive(Debug)]
pub(super) enum Invalid {
    Message(String),
    Regex(RegexError),
    Query(tree_sitter::QueryError),
}

impl From<String> for Invalid {
    fn from(message: String) -> Invalid {
        Invalid::Message(message)
    }
}

impl From<&str> for Invalid {
    fn from(message: &str) -> Invalid {
        Invalid::Message(message.to_string())
    }
}

impl From<RegexError> for Invalid {
    fn from(error: RegexError) -> Invalid {
        Invalid::Regex(error)
    }
}

impl Invalid {
    /// The engine's error for the entry `rule` (`tool curl/wget`, a rule id) of `file`.
    pub(super) fn of(self, file: &str, rule: &str) -> EngineError {
        let (file, rule) = (file.to_string(), rule.to_string());
        match self {
            Invalid::Message(message) => EngineError::RuleInvalid { file, rule, message },
            Invalid::Regex(source) => EngineError::RuleRegex { file, rule, source },
            Invalid::Query(source) => EngineError::RuleQuery { file, rule, source },
        }
    }
}

type PositionalMatchers = Vec<(usize, ValueMatcher)>;
type KeywordMatchers = Vec<(String, ValueMatcher)>;

pub(super) struct Compiler<'l> {
    pub(super) labels: &'l [String],
    /// Per language, the source of each query group, in order; `Pattern::Query` holds the index.
    pub(super) query_sources: HashMap<LanguageKey, Vec<String>>,
    /// Check each regular expression's syntax now (rule files from outside the binary).
    pub(super) check_regexes: bool,
}

impl Compiler<'_> {
    fn labels(&self, names: &[String]) -> Result<crate::facts::Taints, Invalid> {
        let mut taints = crate::facts::Taints::NONE;
        for name in names {
            let Some(bit) = self.labels.iter().position(|l| l == name) else {
                return Err(format!(
                    "label {name:?} is produced by no `[[source]]` (known: {})",
                    self.labels.join(", ")
                )
                .into());
            };
            taints = taints.union(crate::facts::Taints(1 << bit));
        }
        Ok(taints)
    }

    fn regex(&self, pattern: &str) -> Result<LazyRegex, Invalid> {
        if self.check_regexes {
            Ok(LazyRegex::new(pattern)?)
        } else {
            Ok(LazyRegex::trusted(pattern))
        }
    }

    pub(super) fn pattern(&mut self, spec: &PatternSpec, languages: &[Language]) -> Result<Pattern, Invalid> {
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
            || !spec.no_flag.is_empty()
            || !spec.tainted.is_empty()
            || !spec.pipe_from.is_empty()
            || !spec.pipe_to.is_empty()
            || !spec.via.is_empty()
            || !spec.not_via.is_empty();
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
            let optional_set = |names: &[String]| -> Result<Option<NameSet>, Invalid> {
                if names.is_empty() {
                    Ok(None)
                } else {
                    Ok(Some(NameSet::compile(names)?))
                }
            };
            let (args, kwargs) = self.arguments(&spec.args, &spec.kwargs)?;
            return Ok(Pattern::Call(Box::new(CallPattern {
                names: NameSet::compile(names)?,
                not_names: NameSet::compile(&spec.not_call)?,
                args,
                kwargs,
                any_arg: spec
                    .any_arg
                    .as_deref()
                    .map_or(&[][..], OneOrMany::as_slice)
                    .iter()
                    .map(|v| self.value(v))
                    .collect::<Result<Vec<_>, _>>()?,
                receiver: spec.receiver.as_ref().map(|v| self.value(v)).transpose()?,
                flags: spec.flags.clone(),
                any_flag: spec.any_flag.clone(),
                no_flag: spec.no_flag.clone(),
                tainted: if spec.tainted.is_empty() {
                    None
                } else {
                    Some(self.labels(&spec.tainted)?)
                },
                pipe_from: optional_set(&spec.pipe_from)?,
                pipe_to: optional_set(&spec.pipe_to)?,
                via: optional_set(&spec.via)?,
                not_via: optional_set(&spec.not_via)?,
            })));
        }
        if let Some(names) = &spec.import {
            return Ok(Pattern::Import(NameSet::compile(names)?));
        }
        if let Some(regex) = &spec.string {
            return Ok(Pattern::String {
                regex: self.regex(regex)?,
                formatted: spec.formatted,
                slot: None,
            });
        }
        if let Some(binding) = &spec.binding {
            return Ok(Pattern::Binding {
                kinds: binding.kinds.clone(),
                target: self.regex(&binding.target)?,
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
            let compiled =
                tree_sitter::Query::new(&crate::treesitter::grammar(*language), query).map_err(Invalid::Query)?;
            if compiled.capture_names().is_empty() {
                return Err("a `query` needs at least one capture (such as @match) to place the finding".into());
            }
            let sources = self.query_sources.entry((*language).into()).or_default();
            let index = sources.len();
            sources.push(query.clone());
            return Ok(Pattern::Query(index));
        }
        if let Some(text) = &spec.text {
            return Ok(Pattern::Text(self.regex(text)?));
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

    /// Constraints on positional arguments (keys are indices) and keyword arguments.
    fn arguments(
        &self,
        args: &std::collections::BTreeMap<String, ValueSpec>,
        kwargs: &std::collections::BTreeMap<String, ValueSpec>,
    ) -> Result<(PositionalMatchers, KeywordMatchers), Invalid> {
        let mut positional = Vec::new();
        for (index, value) in args {
            let index: usize = index
                .parse()
                .map_err(|_| format!("argument index {index:?} is not a number"))?;
            positional.push((index, self.value(value)?));
        }
        let mut keyword = Vec::new();
        for (key, value) in kwargs {
            keyword.push((key.clone(), self.value(value)?));
        }
        Ok((positional, keyword))
    }

    /// Every effect of one tool or API entry.
    pub(super) fn effects(&self, specs: &[EffectSpec]) -> Result<Vec<crate::effects::Effect>, Invalid> {
        specs.iter().map(|e| self.effect(e)).collect()
    }

    fn effect(&self, spec: &EffectSpec) -> Result<crate::effects::Effect, Invalid> {
        if !crate::effects::EFFECT_KINDS.contains(&spec.kind.as_str()) {
            return Err(format!(
                "effect kind {:?} is not one of {}",
                spec.kind,
                crate::effects::EFFECT_KINDS.join(", ")
            )
            .into());
        }
        let mut file_prefix = spec.file_prefix.as_deref().map(|p| p.chars());
        let file_prefix = match file_prefix.as_mut().map(|c| (c.next(), c.next())) {
            None => None,
            Some((Some(c), None)) => Some(c),
            Some(_) => return Err("`file_prefix` is one character".into()),
        };
        let (if_args, if_kwargs) = self.arguments(&spec.if_args, &spec.if_kwargs)?;
        Ok(crate::effects::Effect {
            kind: spec.kind.clone(),
            options: spec.options.clone(),
            positional: crate::effects::Positional::parse(spec.positional.as_deref())?,
            prefix: spec.prefix.clone(),
            when: spec.when.clone(),
            unless: spec.unless.clone(),
            verbs: spec.verbs.clone(),
            verb_at: spec.verb_at,
            file_prefix,
            reads_file: spec.reads_file,
            own: spec.own,
            operand: spec.operand.clone(),
            last_remote: spec.last_remote,
            stdin: spec.stdin,
            language: spec.language.clone(),
            arg: spec.arg,
            kwarg: spec.kwarg.clone(),
            receiver: spec.receiver,
            after_words: spec.after_words.clone(),
            if_args,
            if_kwargs,
            unless_kwargs: spec.unless_kwargs.clone(),
        })
    }

    fn value(&self, spec: &ValueSpec) -> Result<ValueMatcher, Invalid> {
        let boxed = |v: &Option<Box<ValueSpec>>| -> Result<Option<Box<ValueMatcher>>, Invalid> {
            v.as_ref().map(|s| self.value(s).map(Box::new)).transpose()
        };
        Ok(ValueMatcher {
            present: spec.present,
            regex: spec.regex.as_deref().map(|p| self.regex(p)).transpose()?,
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

    pub(super) fn combined_queries(&self) -> Result<HashMap<LanguageKey, CombinedQuery>, EngineError> {
        let mut combined = HashMap::default();
        for (key, sources) in &self.query_sources {
            let language = match key {
                LanguageKey::Python => Language::Python,
                LanguageKey::Bash => Language::Bash,
            };
            let grammar = crate::treesitter::grammar(language);
            let mut group_of_pattern = Vec::new();
            for (group, source) in sources.iter().enumerate() {
                // Each group was compiled alone before, so this cannot fail; its count of
                // patterns maps the combined query's pattern indices back to groups.
                let alone = tree_sitter::Query::new(&grammar, source)
                    .map_err(|source| EngineError::QueriesCombine { source })?;
                group_of_pattern.extend(std::iter::repeat_n(group, alone.pattern_count()));
            }
            let query = tree_sitter::Query::new(&grammar, &sources.join("\n"))
                .map_err(|source| EngineError::QueriesCombine { source })?;
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
