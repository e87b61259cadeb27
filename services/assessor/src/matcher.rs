//! Running a compiled rule set over the facts of one request.

use crate::budget::Budget;
use crate::facts::{Facts, LineIndex, Span};
use crate::rules::{LanguageKey, Pattern, RuleSet};
use airlock_protocol::request::Language;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cell::OnceCell;
use std::ops::ControlFlow;
use streaming_iterator::StreamingIterator;
use tree_sitter::{QueryCursor, QueryCursorOptions};

/// What the rules look at.
pub struct MatchInput<'a> {
    /// The submitted file's language: only its rules' `text` and `query` patterns run.
    pub language: Language,
    pub source: &'a str,
    pub python: &'a Facts,
    pub shell: &'a Facts,
}

impl MatchInput<'_> {
    fn facts(&self, language: Language) -> &Facts {
        match language {
            Language::Python => self.python,
            Language::Bash => self.shell,
        }
    }
}

/// One place a rule matched; `related` are the other parts of an `all` combination.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub rule: usize,
    pub span: Span,
    pub related: Vec<Span>,
    /// The path the matched value took, when it came from elsewhere in the program.
    pub trail: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
struct Place {
    span: Span,
    related: Vec<Span>,
    trail: Option<String>,
}

impl Place {
    fn at(span: Span) -> Place {
        Place {
            span,
            related: Vec::new(),
            trail: None,
        }
    }

    fn of_call(pattern: &crate::rules::CallPattern, call: &crate::facts::Call) -> Place {
        Place {
            span: call.span,
            related: Vec::new(),
            trail: pattern.trail(call),
        }
    }
}

pub fn run(rules: &RuleSet, input: &MatchInput<'_>, budget: &mut Budget) -> Vec<Hit> {
    let query_hits = run_queries(rules, input, budget);
    let finder = Finder {
        input,
        query_hits: &query_hits,
        lines: std::cell::OnceCell::new(),
        python_calls: CallsByName::of(input.python),
        shell_calls: CallsByName::of(input.shell),
        python_strings: (0..rules.nested_strings.len()).map(|_| OnceCell::new()).collect(),
        shell_strings: (0..rules.nested_strings.len()).map(|_| OnceCell::new()).collect(),
        rules,
    };
    let mut hits = Vec::new();
    let mut seen: HashSet<(usize, u32)> = HashSet::default();
    let mut push = |hits: &mut Vec<Hit>, rule: usize, place: Place| {
        if seen.insert((rule, place.span.line)) {
            hits.push(Hit {
                rule,
                span: place.span,
                related: place.related,
                trail: place.trail,
            });
        }
    };

    for language in [Language::Python, Language::Bash] {
        let facts = input.facts(language);
        let key = LanguageKey::from(language);
        let is_file_language = language == input.language;
        if !is_file_language && facts.calls.is_empty() && facts.strings.is_empty() {
            continue;
        }
        if let Some(index) = rules.call_index.get(&key) {
            for call in &facts.calls {
                if budget.exhausted() {
                    return hits;
                }
                for i in index.candidates(&call.name) {
                    if let Pattern::Call(pattern) = &rules.rules[i].pattern
                        && pattern.matches(call)
                    {
                        push(&mut hits, i, Place::of_call(pattern, call));
                    }
                }
            }
        }
        if let Some(index) = rules.string_index.get(&key) {
            for lit in &facts.strings {
                if budget.exhausted() {
                    return hits;
                }
                for i in index.matching(&lit.text) {
                    if let Pattern::String { formatted, .. } = &rules.rules[i].pattern
                        && formatted.is_none_or(|f| f == lit.formatted)
                    {
                        push(&mut hits, i, Place::at(lit.span));
                    }
                }
            }
        }
        for (i, rule) in rules.rules.iter().enumerate() {
            if !rule.languages.contains(&language) || matches!(rule.pattern, Pattern::Call(_) | Pattern::String { .. })
            {
                continue;
            }
            if budget.exhausted() {
                return hits;
            }
            for place in finder.find(&rule.pattern, language, is_file_language) {
                push(&mut hits, i, place);
            }
        }
    }
    hits
}

struct Finder<'a> {
    input: &'a MatchInput<'a>,
    query_hits: &'a HashMap<usize, Vec<Span>>,
    /// Lines of the source, made when a `text` pattern first needs them.
    lines: std::cell::OnceCell<LineIndex>,
    python_calls: CallsByName<'a>,
    shell_calls: CallsByName<'a>,
    rules: &'a RuleSet,
    /// Per slot of `RuleSet::nested_strings`, the strings of the language that match it,
    /// found when a combination first asks.
    python_strings: Vec<OnceCell<Vec<usize>>>,
    shell_strings: Vec<OnceCell<Vec<usize>>>,
}

/// The calls of one language grouped by name: a call pattern looks up its few exact names, and
/// only a pattern with globs is checked against each distinct name (a file calls a few dozen
/// names hundreds of times); then its constraints are checked on the calls of those names.
struct CallsByName<'a> {
    position: HashMap<&'a str, usize>,
    names: Vec<(&'a str, Vec<usize>)>,
}

impl<'a> CallsByName<'a> {
    fn of(facts: &'a Facts) -> CallsByName<'a> {
        let mut position: HashMap<&'a str, usize> = HashMap::default();
        let mut names: Vec<(&'a str, Vec<usize>)> = Vec::new();
        for (i, call) in facts.calls.iter().enumerate() {
            let slot = *position.entry(call.name.as_str()).or_insert_with(|| {
                names.push((call.name.as_str(), Vec::new()));
                names.len() - 1
            });
            names[slot].1.push(i);
        }
        CallsByName { position, names }
    }

    /// Indices of the calls whose name the pattern takes, in the facts' order.
    fn matching(&self, pattern: &crate::rules::CallPattern) -> Vec<usize> {
        let mut indices: Vec<usize> = if pattern.names.has_globs() {
            self.names
                .iter()
                .filter(|(name, _)| pattern.names.contains(name))
                .flat_map(|(_, calls)| calls.iter().copied())
                .collect()
        } else {
            pattern
                .names
                .exact_names()
                .filter_map(|name| self.position.get(name))
                .flat_map(|&slot| self.names[slot].1.iter().copied())
                .collect()
        };
        indices.sort_unstable();
        indices
    }
}

impl Finder<'_> {
    fn nested_strings(&self, language: Language, slot: usize) -> &[usize] {
        let cells = match language {
            Language::Python => &self.python_strings,
            Language::Bash => &self.shell_strings,
        };
        let (Some(cell), Some(regex)) = (cells.get(slot), self.rules.nested_strings.get(slot)) else {
            return &[];
        };
        cell.get_or_init(|| {
            let strings = &self.input.facts(language).strings;
            (0..strings.len())
                .filter(|&i| regex.is_match(&strings[i].text))
                .collect()
        })
    }

    fn find(&self, pattern: &Pattern, language: Language, is_file_language: bool) -> Vec<Place> {
        let facts = self.input.facts(language);
        match pattern {
            Pattern::Call(p) => {
                let calls = match language {
                    Language::Python => &self.python_calls,
                    Language::Bash => &self.shell_calls,
                };
                calls
                    .matching(p)
                    .into_iter()
                    .filter_map(|i| facts.calls.get(i))
                    .filter(|c| p.constraints_hold(c))
                    .map(|c| Place::of_call(p, c))
                    .collect()
            }
            Pattern::Import(names) => facts
                .imports
                .iter()
                .filter(|i| names.contains(&i.name))
                .map(|i| Place::at(i.span))
                .collect(),
            Pattern::String {
                slot: Some(slot),
                formatted,
                ..
            } => self
                .nested_strings(language, *slot)
                .iter()
                .filter_map(|&i| facts.strings.get(i))
                .filter(|s| formatted.is_none_or(|f| f == s.formatted))
                .map(|s| Place::at(s.span))
                .collect(),
            Pattern::String { regex, formatted, .. } => facts
                .strings
                .iter()
                .filter(|s| formatted.is_none_or(|f| f == s.formatted) && regex.is_match(&s.text))
                .map(|s| Place::at(s.span))
                .collect(),
            Pattern::Binding { kinds, target, value } => facts
                .bindings
                .iter()
                .filter(|b| kinds.contains(&b.kind) && target.is_match(&b.target) && value.matches(Some(&b.value)))
                .map(|b| Place::at(b.span))
                .collect(),
            Pattern::Name(names) => facts
                .names
                .iter()
                .filter(|n| names.contains(&n.name))
                .map(|n| Place::at(n.span))
                .collect(),
            Pattern::Query(group) if is_file_language => self
                .query_hits
                .get(group)
                .map(|spans| spans.iter().copied().map(Place::at).collect())
                .unwrap_or_default(),
            Pattern::Text(regex) if is_file_language => regex
                .find_ranges(self.input.source, 1000)
                .into_iter()
                .map(|(start, end)| {
                    let lines = self.lines.get_or_init(|| LineIndex::new(self.input.source));
                    Place::at(lines.span(start, end))
                })
                .collect(),
            Pattern::Query(_) | Pattern::Text(_) => Vec::new(),
            Pattern::All { all, none } => {
                let mut firsts = Vec::with_capacity(all.len());
                let mut places = Vec::new();
                for (i, part) in all.iter().enumerate() {
                    let found = self.find(part, language, is_file_language);
                    let Some(first) = found.first() else {
                        return Vec::new();
                    };
                    firsts.push(first.span);
                    if i == 0 {
                        places = found;
                    }
                }
                if none
                    .iter()
                    .any(|p| !self.find(p, language, is_file_language).is_empty())
                {
                    return Vec::new();
                }
                for place in &mut places {
                    place.related = firsts
                        .iter()
                        .skip(1)
                        .copied()
                        .filter(|s| s.line != place.span.line)
                        .collect();
                }
                places
            }
            Pattern::Any(parts) => parts
                .iter()
                .flat_map(|p| self.find(p, language, is_file_language))
                .collect(),
        }
    }
}

/// Runs every query rule of the file's language in one pass over a tree-sitter tree of the
/// file, parsed here only when the rule set has such rules (none of the built-in rules is one).
fn run_queries(rules: &RuleSet, input: &MatchInput<'_>, budget: &mut Budget) -> HashMap<usize, Vec<Span>> {
    let mut found: HashMap<usize, Vec<Span>> = HashMap::default();
    let Some(combined) = rules.queries.get(&input.language.into()) else {
        return found;
    };
    let Some(tree) = crate::treesitter::parse(input.language, input.source, budget) else {
        return found;
    };
    let clock = budget.clock();
    let mut give_up = |_: &tree_sitter::QueryCursorState| {
        if clock.passed() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let mut cursor = QueryCursor::new();
    cursor.set_match_limit(4096);
    let mut matches = cursor.matches_with_options(
        &combined.query,
        tree.root_node(),
        input.source.as_bytes(),
        QueryCursorOptions::new().progress_callback(&mut give_up),
    );
    while let Some(m) = matches.next() {
        let Some(&group) = combined.group_of_pattern.get(m.pattern_index) else {
            continue;
        };
        // The capture named `match` places the finding; without one, the first capture does.
        let names = combined.query.capture_names();
        let chosen = m
            .captures()
            .iter()
            .find(|c| names.get(c.index as usize).is_some_and(|n| *n == "match"))
            .or_else(|| m.captures().first());
        let Some(capture) = chosen else {
            continue;
        };
        let spans = found.entry(group).or_default();
        if spans.len() < 1000 {
            spans.push(crate::treesitter::span_of(capture.node, None));
        }
    }
    budget.check_now();
    found
}
