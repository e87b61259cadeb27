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
        let (call_index, string_index) = index_rules(&parts.rules);
        let (nested_strings, nested_string_slots) = index_nested_strings(&mut parts.rules);
        Ok(RuleSet {
            source_index: index_sources(&parts.sources),
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
            nested_string_slots,
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

/// The string patterns inside combinations, given slots (one per distinct expression: the same
/// expression in two rules is tested once) and gathered per language into one set each, so a
/// file's strings are each scanned once for all of them instead of once per pattern.
fn index_nested_strings(rules: &mut [Rule]) -> (HashMap<LanguageKey, StringIndex>, usize) {
    fn visit(
        pattern: &mut Pattern,
        top: bool,
        languages: &[airlock_protocol::request::Language],
        slots: &mut HashMap<String, usize>,
        per_language: &mut HashMap<LanguageKey, (Vec<String>, Vec<usize>)>,
    ) {
        match pattern {
            Pattern::String { regex, slot, .. } if !top => {
                let next = slots.len();
                let id = *slots.entry(regex.as_str().to_string()).or_insert(next);
                *slot = Some(id);
                for language in languages {
                    let entry = per_language.entry((*language).into()).or_default();
                    if !entry.1.contains(&id) {
                        entry.0.push(regex.as_str().to_string());
                        entry.1.push(id);
                    }
                }
            }
            Pattern::All { all, none } => {
                for part in all.iter_mut().chain(none.iter_mut()) {
                    visit(part, false, languages, slots, per_language);
                }
            }
            Pattern::Any(parts) => {
                for part in parts {
                    visit(part, false, languages, slots, per_language);
                }
            }
            _ => {}
        }
    }
    let mut slots: HashMap<String, usize> = HashMap::default();
    let mut per_language: HashMap<LanguageKey, (Vec<String>, Vec<usize>)> = HashMap::default();
    for rule in rules.iter_mut() {
        visit(&mut rule.pattern, true, &rule.languages, &mut slots, &mut per_language);
    }
    let index = per_language
        .into_iter()
        .map(|(language, (patterns, ids))| (language, StringIndex::new(patterns, ids)))
        .collect();
    (index, slots.len())
}

/// The sources by called name, as `index_rules` does for rules.
fn index_sources(sources: &[Source]) -> CallIndex {
    let mut source_index = CallIndex::default();
    for (i, source) in sources.iter().enumerate() {
        if let Pattern::Call(call) = &source.pattern {
            source_index.add(&call.names, i);
        }
    }
    source_index
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
