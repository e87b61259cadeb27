//! Assembling a rule set from parsed rule files: the data-flow labels first (rules refer to
//! them), then each file's sources, embedded-code calls, wrappers, tool and API tables and rules,
//! each compiled and checked, then the indexes the matcher looks rules up by.

use super::compile::{Compiler, Invalid};
use super::compiled::*;
use super::spec::*;
use crate::effects::program_name;
use crate::error::EngineError;
use crate::values::*;
use airlock_protocol::assessment::{Category, Level};
use rustc_hash::FxHashMap as HashMap;

impl RuleSet {
    pub(super) fn from_parsed(
        parsed: Vec<(String, RuleFile)>,
        version: String,
        check_regexes: bool,
    ) -> Result<RuleSet, EngineError> {
        // Labels first: rules refer to them.
        let labels = collect_labels(&parsed)?;
        let mut compiler = Compiler {
            labels: &labels,
            query_sources: HashMap::default(),
            check_regexes,
        };
        let mut parts = Parts::default();
        for (file_name, file) in parsed {
            parts.add_sources(&mut compiler, &file_name, file.source)?;
            parts.add_embeds(&file_name, file.embed)?;
            parts.add_wrappers(file.wrapper);
            parts.add_tools(&mut compiler, &file_name, file.tool)?;
            parts.add_apis(&mut compiler, &file_name, file.api)?;
            parts.add_rules(&mut compiler, &file_name, file.rule)?;
        }
        if parts.rules.is_empty() {
            return Err(EngineError::NoRules);
        }
        let queries = compiler.combined_queries()?;
        let mut source_sets = HashMap::default();
        let (call_index, string_index) = index_rules(&parts.rules);
        let nested_strings = index_nested_strings(&mut parts.rules);
        Ok(RuleSet {
            source_index: index_sources(&parts.sources, &mut source_sets),
            rules: parts.rules,
            version,
            labels,
            sources: parts.sources,
            embeds: parts.embeds,
            wrappers: parts.wrappers,
            effects: parts.effects,
            queries,
            call_index,
            string_index,
            nested_strings,
            source_sets,
        })
    }
}

/// Every data-flow label the files name, in order of first mention (each becomes one bit).
fn collect_labels(parsed: &[(String, RuleFile)]) -> Result<Vec<String>, EngineError> {
    let mut labels: Vec<String> = Vec::new();
    for (_, file) in parsed {
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
    Ok(labels)
}

/// Per language, the rules by called name (and those with name globs), and one regex set over
/// every string pattern.
fn index_rules(rules: &[Rule]) -> (HashMap<LanguageKey, CallIndex>, HashMap<LanguageKey, StringIndex>) {
    let mut call_index: HashMap<LanguageKey, CallIndex> = HashMap::default();
    let mut string_patterns: HashMap<LanguageKey, (Vec<String>, Vec<usize>)> = HashMap::default();
    for (i, rule) in rules.iter().enumerate() {
        for language in &rule.languages {
            match &rule.pattern {
                Pattern::Call(call) => {
                    call_index.entry((*language).into()).or_default().add(&call.names, i);
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
    let string_index = string_patterns
        .into_iter()
        .map(|(language, (patterns, rule_indices))| (language, StringIndex::new(patterns, rule_indices)))
        .collect();
    (call_index, string_index)
}

/// The string patterns inside combinations, given slots: one per distinct expression (the same
/// expression in two rules is tested once per string, as the matcher remembers each slot's
/// strings).
fn index_nested_strings(rules: &mut [Rule]) -> Vec<LazyRegex> {
    fn visit(pattern: &mut Pattern, top: bool, slots: &mut HashMap<String, usize>, regexes: &mut Vec<LazyRegex>) {
        match pattern {
            Pattern::String { regex, slot, .. } if !top => {
                let id = *slots.entry(regex.as_str().to_string()).or_insert_with(|| {
                    regexes.push(regex.clone());
                    regexes.len() - 1
                });
                *slot = Some(id);
            }
            Pattern::All { all, none } => {
                for part in all.iter_mut().chain(none.iter_mut()) {
                    visit(part, false, slots, regexes);
                }
            }
            Pattern::Any(parts) => {
                for part in parts {
                    visit(part, false, slots, regexes);
                }
            }
            _ => {}
        }
    }
    let mut slots: HashMap<String, usize> = HashMap::default();
    let mut regexes = Vec::new();
    for rule in rules.iter_mut() {
        visit(&mut rule.pattern, true, &mut slots, &mut regexes);
    }
    regexes
}

/// The sources by called name, as `index_rules` does for rules. Those that only test their
/// first argument against an expression (`@read` of a credential store, of `/proc`, of the
/// working directory, ...) are gathered per language and name into one set each instead
/// (`source_sets`): a file read is tested once for all of them.
fn index_sources(
    sources: &[Source],
    sets: &mut HashMap<LanguageKey, HashMap<String, StringIndex>>,
) -> HashMap<LanguageKey, CallIndex> {
    // Per language: a shell command is not tried against Python's globbed sources
    // (`subprocess.*`, `pwd.*`, ...), nor a Python call against the shell's.
    let mut source_index: HashMap<LanguageKey, CallIndex> = HashMap::default();
    let mut grouped: HashMap<(LanguageKey, String), (Vec<String>, Vec<usize>)> = HashMap::default();
    for (i, source) in sources.iter().enumerate() {
        if let Pattern::Call(call) = &source.pattern {
            match first_argument_expression(call) {
                Some(pattern) => {
                    for language in &source.languages {
                        for name in &call.names.exact {
                            let entry = grouped.entry(((*language).into(), name.clone())).or_default();
                            entry.0.push(pattern.to_string());
                            entry.1.push(i);
                        }
                    }
                }
                None => {
                    for language in &source.languages {
                        source_index.entry((*language).into()).or_default().add(&call.names, i);
                    }
                }
            }
        }
    }
    for ((language, name), (patterns, ids)) in grouped {
        sets.entry(language)
            .or_default()
            .insert(name, StringIndex::new(patterns, ids));
    }
    source_index
}

/// The expression of a call pattern made of exact names and `args.0 = { regex = ... }` alone.
fn first_argument_expression(call: &CallPattern) -> Option<&str> {
    let [(0, matcher)] = call.args.as_slice() else {
        return None;
    };
    let only_regex = matcher.present.is_none()
        && matcher.equals.is_none()
        && matcher.kind.is_none()
        && matcher.truthy.is_none()
        && matcher.int_lt.is_none()
        && matcher.int_ge.is_none()
        && matcher.int_bits.is_none()
        && matcher.name.is_none()
        && matcher.tainted.is_none()
        && matcher.element.is_none()
        && matcher.first.is_none()
        && matcher.not.is_none()
        && matcher.any_of.is_none();
    let alone = !call.names.has_globs()
        && call.not_names.exact.is_empty()
        && !call.not_names.has_globs()
        && call.kwargs.is_empty()
        && call.any_arg.is_empty()
        && call.receiver.is_none()
        && call.flags.is_empty()
        && call.any_flag.is_empty()
        && call.no_flag.is_empty()
        && call.tainted.is_none()
        && call.pipe_from.is_none()
        && call.pipe_to.is_none()
        && call.via.is_none()
        && call.not_via.is_none();
    (only_regex && alone)
        .then(|| matcher.regex.as_ref().map(|r| r.as_str()))
        .flatten()
}

/// What the rule files compile to, gathered file by file.
#[derive(Default)]
struct Parts {
    sources: Vec<Source>,
    embeds: Vec<Embed>,
    wrappers: HashMap<String, WrapperSpec>,
    effects: crate::effects::EffectTables,
    rules: Vec<Rule>,
    /// Each rule id and the file that first defined it.
    seen: HashMap<String, String>,
}

impl Parts {
    /// Data-flow sources: where a labelled value comes from.
    fn add_sources(
        &mut self,
        compiler: &mut Compiler<'_>,
        file_name: &str,
        specs: Vec<SourceSpec>,
    ) -> Result<(), EngineError> {
        for spec in specs {
            let invalid = invalid_entry(file_name, format!("source {}", spec.label));
            let pattern = compiler.pattern(&spec.pattern, &spec.languages).map_err(&invalid)?;
            if !matches!(pattern, Pattern::Call(_) | Pattern::Name(_)) {
                return Err(invalid("a source's match must be a `call` or a `name` pattern".into()));
            }
            let bit = compiler.labels.iter().position(|l| *l == spec.label).unwrap_or(0);
            self.sources.push(Source {
                label: crate::facts::Taints(1 << bit),
                languages: spec.languages,
                pattern,
            });
        }
        Ok(())
    }

    /// Calls whose string arguments are code in another language.
    fn add_embeds(&mut self, file_name: &str, specs: Vec<EmbedSpec>) -> Result<(), EngineError> {
        for spec in specs {
            let names = NameSet::compile(&spec.call).map_err(|message| EngineError::RuleInvalid {
                file: file_name.to_owned(),
                rule: "embed".into(),
                message,
            })?;
            self.embeds.push(Embed { spec, names });
        }
        Ok(())
    }

    /// Programs that run the program named in their arguments.
    fn add_wrappers(&mut self, specs: Vec<WrapperSpec>) {
        for spec in specs {
            for name in &spec.name {
                self.wrappers.insert(program_name(name), spec.clone());
            }
        }
    }

    /// Shell tools by what their options do.
    fn add_tools(
        &mut self,
        compiler: &mut Compiler<'_>,
        file_name: &str,
        specs: Vec<ToolSpec>,
    ) -> Result<(), EngineError> {
        for spec in specs {
            let invalid = invalid_entry(file_name, format!("tool {}", spec.names.join("/")));
            // Options whose values are operands take a value too.
            let value_options = spec
                .value_options
                .iter()
                .chain(spec.effects.iter().flat_map(|e| e.options.iter()))
                .cloned()
                .collect();
            let tool = std::sync::Arc::new(crate::effects::Tool {
                bundled_first: spec.bundled_first,
                value_options,
                effects: compiler.effects(&spec.effects).map_err(&invalid)?,
            });
            for name in &spec.names {
                if self
                    .effects
                    .tools
                    .insert(program_name(name), std::sync::Arc::clone(&tool))
                    .is_some()
                {
                    return Err(invalid(format!("tool {name} is described twice").into()));
                }
            }
        }
        Ok(())
    }

    /// Python calls by what they do.
    fn add_apis(
        &mut self,
        compiler: &mut Compiler<'_>,
        file_name: &str,
        specs: Vec<ApiSpec>,
    ) -> Result<(), EngineError> {
        for spec in specs {
            let invalid = invalid_entry(file_name, format!("api {}", spec.names.join("/")));
            let api = crate::effects::Api {
                names: NameSet::compile(&spec.names).map_err(|e| invalid(e.into()))?,
                effects: compiler.effects(&spec.effects).map_err(&invalid)?,
            };
            let index = self.effects.apis.len();
            self.effects.api_index.add(&api.names, index);
            self.effects.apis.push(api);
        }
        Ok(())
    }

    /// The rules themselves, each checked for what a rule must have.
    fn add_rules(
        &mut self,
        compiler: &mut Compiler<'_>,
        file_name: &str,
        specs: Vec<RuleSpec>,
    ) -> Result<(), EngineError> {
        for spec in specs {
            if let Some(first_file) = self.seen.insert(spec.id.clone(), file_name.to_owned()) {
                return Err(EngineError::DuplicateRule {
                    id: spec.id,
                    first_file,
                    second_file: file_name.to_owned(),
                });
            }
            let invalid = invalid_entry(file_name, spec.id.clone());
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
            let pattern = compiler.pattern(&spec.pattern, &spec.languages).map_err(&invalid)?;
            self.rules.push(Rule {
                action: spec.action.clone().unwrap_or_else(|| spec.id.clone()),
                id: spec.id,
                category: spec.category,
                severity: spec.severity,
                confidence: spec.confidence,
                languages: spec.languages,
                explanation: spec.explanation.trim().to_string(),
                references: spec.references,
                fails_closed: spec.fails_closed,
                pattern,
                examples: spec.examples,
                more_examples: spec.more_examples,
                file: file_name.to_owned(),
            });
        }
        Ok(())
    }
}

/// The error for an invalid entry of a file (`rule` names it: `tool curl/wget`, a rule id).
fn invalid_entry(file_name: &str, rule: String) -> impl Fn(Invalid) -> EngineError + '_ {
    move |invalid| invalid.of(file_name, &rule)
}
