//! Findings: from a rule's match, a threat list hit, an analysis cut short, or the request's
//! environment; and the bounds that keep an assessment small whatever the code.

use crate::facts::{LineIndex, Span, shorten_to};
use crate::matcher;
use airlock_protocol::assessment::{Category, Confidence, Finding, Level};
use airlock_protocol::request::{Inputs, Origin};

/// Findings kept per assessment; the rest are counted in the summary.
pub const MAX_FINDINGS: usize = 100;
/// Characters of one finding's explanation (the rule's text, related lines and the path a value
/// took). With [`MAX_FINDINGS`] and the snippet limit this bounds an assessment to a few hundred
/// KiB, far below the bus's message limit, whatever the code.
pub const MAX_EXPLANATION_CHARS: usize = 1200;
/// Characters of a snippet.
pub const MAX_SNIPPET_CHARS: usize = 120;

/// What the engine's configuration says about findings: where a BLOCKED finding needs more
/// confidence, how low an unanalysed program may rate, and the threat list's version to cite.
pub(super) struct FindingPolicy<'e> {
    pub blocked_min_confidence: Confidence,
    pub unanalysed_level: Level,
    pub unknown_asks_a_human: bool,
    pub threats_version: &'e str,
}

impl FindingPolicy<'_> {
    pub(super) fn rule_finding(
        &self,
        rule: &crate::rules::Rule,
        hit: &matcher::Hit,
        source: &str,
        origin: Origin,
    ) -> Finding {
        let mut severity = rule.severity;
        let mut explanation = rule.explanation.clone();
        if let Some(trail) = &hit.trail {
            explanation.push_str(&format!(" The value's path: {trail} → line {}.", hit.span.line.max(1)));
        }
        for related in &hit.related {
            explanation.push_str(&format!(
                " Together with line {}: `{}`.",
                related.line,
                snippet(source, *related)
            ));
        }
        if rule.category == Category::MaliciousIntent && origin == Origin::Generated && severity > Level::High {
            severity = Level::High;
            explanation.push_str(
                " Rated HIGH rather than BLOCKED because Mai generated this code: behavioural patterns \
                 block only external code.",
            );
        }
        let mut category = rule.category;
        if rule.fails_closed && origin == Origin::External && self.unknown_asks_a_human {
            // What the assessor cannot follow in code from outside goes to a human.
            category = Category::Input;
            explanation.push_str(
                " The assessor cannot tell what this runs, so for code from outside a human is asked whatever \
                 the level.",
            );
        }
        if severity == Level::Blocked && rule.confidence < self.blocked_min_confidence {
            severity = Level::High;
            explanation
                .push_str(" Rated HIGH rather than BLOCKED: the rule's confidence is below the configured minimum.");
        }
        Finding {
            rule_id: rule.id.clone(),
            category,
            severity,
            confidence: rule.confidence,
            line: hit.span.line.max(1),
            column: hit.span.column.max(1),
            snippet: snippet(source, hit.span),
            explanation: shorten_to(&explanation, MAX_EXPLANATION_CHARS),
            references: rule.references.clone(),
        }
    }

    pub(super) fn threat_finding(&self, code: &[u8], hit: &crate::threats::ThreatHit) -> Finding {
        let (line, column, snippet) = if hit.end > hit.start {
            let before = code.get(..hit.start).unwrap_or_default();
            let line = before.iter().filter(|&&b| b == b'\n').count() as u32 + 1;
            let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let line_end = code[hit.start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(code.len(), |p| hit.start + p);
            let text = String::from_utf8_lossy(&code[line_start..line_end]);
            (line, (hit.start - line_start) as u32 + 1, shorten(text.trim()))
        } else {
            (1, 1, String::new())
        };
        Finding {
            rule_id: hit.kind.rule_id().into(),
            category: Category::KnownThreat,
            severity: Level::Blocked,
            confidence: Confidence::High,
            line,
            column,
            snippet,
            explanation: format!(
                "On the operators' threat list (version {}): {} ({}).",
                self.threats_version, hit.description, hit.value
            ),
            references: vec![],
        }
    }

    /// What the program connects to that is a kind of address malware uses (the threat list's
    /// `[[shady]]` entries), or an IP number: one finding per address.
    pub(super) fn destination_findings(
        &self,
        facts: &[&crate::facts::Facts],
        source: &str,
        destinations: &crate::destinations::Destinations,
    ) -> Vec<Finding> {
        let mut seen = std::collections::HashSet::new();
        let mut findings = Vec::new();
        let network = facts
            .iter()
            .flat_map(|f| f.calls.iter())
            .filter(|c| matches!(c.name.as_str(), "@fetch" | "@send" | "@connect"));
        for call in network {
            // `socket.create_connection(("host", 443))`: the address is the pair's host.
            let address = match call.args.first().map(|a| &a.value) {
                Some(crate::facts::Value::Seq(pair)) => pair.first().and_then(|host| host.text()),
                _ => call.args.first().and_then(|a| a.text()),
            };
            let Some(address) = address else {
                continue;
            };
            let Some(hit) = destinations.classify(&address) else {
                continue;
            };
            if !seen.insert(hit.address.clone()) {
                continue;
            }
            let (id, what) = if hit.category.starts_with("a raw IP") {
                (
                    "AIR-DESTINATION-RAW-IP",
                    "The program connects to a raw IP address, not a name: nothing says whose machine it is."
                        .to_string(),
                )
            } else if hit.category.contains("written as a number") {
                ("AIR-DESTINATION-ENCODED-IP", "The program connects to an IP address written as one number (decimal, hex or octal): a form chosen so that nobody recognises the address.".to_string())
            } else {
                (
                    "AIR-DESTINATION-SHADY",
                    format!(
                        "The program contacts {} ({}, on the operators' list of shady destinations, version {}): the kind of place malware fetches its next stage from or sends what it took to.",
                        hit.address, hit.category, self.threats_version
                    ),
                )
            };
            findings.push(Finding {
                rule_id: id.into(),
                category: Category::MaliciousIntent,
                severity: hit.level,
                confidence: Confidence::Medium,
                line: call.span.line.max(1),
                column: call.span.column.max(1),
                snippet: snippet(source, call.span),
                explanation: shorten_to(&what, MAX_EXPLANATION_CHARS),
                references: vec!["ATT&CK T1102".into(), "ATT&CK T1567".into()],
            });
        }
        findings
    }

    /// Analysis that stopped before the end (size, depth, time) fails closed: what was not
    /// analysed could hide anything, so external code goes to a human (BLOCKED) and code Mai
    /// generated is rated HIGH, whatever was found before the stop.
    pub(super) fn cut_short_finding(&self, id: &str, reason: &str, origin: Origin) -> Finding {
        self.fail_closed(id, &format!("The analysis was cut short: {reason}."), 1, origin)
    }

    /// Bytes that cannot be read as the interpreter reads them. Python source that the
    /// interpreter would read differently (or not at all) is refused whatever its origin; the
    /// rest (binary data, bash with NUL bytes or invalid UTF-8) fails closed as a cut-short
    /// analysis does.
    pub(super) fn unanalysable_finding(&self, problem: &crate::input::Problem, origin: Origin) -> Finding {
        if !problem.refused {
            let opening = format!("The code could not be analysed in full: {}.", problem.reason);
            return self.fail_closed(problem.rule_id, &opening, problem.line, origin);
        }
        Finding {
            rule_id: problem.rule_id.into(),
            category: Category::Input,
            severity: Level::Blocked,
            confidence: Confidence::High,
            line: problem.line.max(1),
            column: 1,
            snippet: String::new(),
            explanation: shorten_to(
                &format!(
                    "Refused: {}. Airlock rates, shows and signs the text the interpreter runs, and this code \
                     cannot be read that way: it is BLOCKED whatever its origin.",
                    problem.reason
                ),
                MAX_EXPLANATION_CHARS,
            ),
            references: vec!["CWE-838".into()],
        }
    }

    fn fail_closed(&self, id: &str, opening: &str, line: u32, origin: Origin) -> Finding {
        let floor = match origin {
            Origin::External => Level::Blocked,
            Origin::Generated => Level::High,
        };
        Finding {
            rule_id: id.into(),
            category: Category::Input,
            severity: self.unanalysed_level.max(floor),
            confidence: Confidence::High,
            line: line.max(1),
            column: 1,
            snippet: String::new(),
            explanation: shorten_to(
                &format!(
                    "{opening} What was not analysed could hide anything, so the code is rated as if it did ({}), \
                     and a human is asked whatever the policy says for its level.",
                    match origin {
                        Origin::External => "BLOCKED for external code",
                        Origin::Generated => "at least HIGH for code Mai generated",
                    }
                ),
                MAX_EXPLANATION_CHARS,
            ),
            references: vec![],
        }
    }

    /// Arguments and environment variables of a request, rated as what they are: variables that
    /// make an interpreter run or load code at start-up are code the program's text does not show.
    pub(super) fn rate_inputs(&self, inputs: &Inputs, origin: Origin, findings: &mut Vec<Finding>) {
        for (name, value) in &inputs.env {
            if !is_interpreter_start_variable(name) {
                continue;
            }
            let (severity, tail) = match origin {
                Origin::External => (Level::Blocked, ""),
                Origin::Generated => (
                    Level::High,
                    " Rated HIGH rather than BLOCKED because Mai generated this code: behavioural patterns block only external code.",
                ),
            };
            findings.push(Finding {
                rule_id: "AIR-INPUT-ENV-STARTUP".into(),
                category: Category::MaliciousIntent,
                severity,
                confidence: Confidence::High,
                line: 1,
                column: 1,
                snippet: shorten(&format!("{name}={value}")),
                explanation: shorten_to(
                    &format!(
                        "The request sets {name}, which makes the interpreter run or load code before (or \
                         around) the program: that code is not in the program's text and no reviewer sees it \
                         run.{tail}"
                    ),
                    MAX_EXPLANATION_CHARS,
                ),
                references: vec!["CWE-427".into(), "ATT&CK T1574.006".into()],
            });
        }
    }
}

/// A Trojan Source construct found in the file (see `crate::trojan`).
pub(super) fn trojan_finding(hit: &crate::trojan::Hit, lines: &LineIndex, source: &str) -> Finding {
    use crate::trojan::Kind;
    let (id, severity, what) = match hit.kind {
        Kind::InvisibleInName => (
            "AIR-TROJAN-INVISIBLE",
            Level::High,
            "A name holds characters that display as nothing: two names that look the same are different, or \
             a name that looks empty is one.",
        ),
        Kind::InvisibleInText => (
            "AIR-TROJAN-INVISIBLE-TEXT",
            Level::Medium,
            "A string holds characters that display as nothing next to what they change (a URL, a path, a \
             command): what a reader sees is not the value the program uses.",
        ),
        Kind::Lookalike => (
            "AIR-TROJAN-HOMOGLYPH",
            Level::High,
            "A name is written with letters of another script that look like Latin ones: it reads as a name \
             the reader knows and is another.",
        ),
        Kind::Compatibility => (
            "AIR-TROJAN-COMPAT-FORM",
            Level::High,
            "A name is written in compatibility forms (fullwidth, mathematical or other look-alike letters) \
             that Python folds into a plain name: it runs as that name while a search for it finds nothing.",
        ),
    };
    let span = lines.span(hit.start, hit.end);
    Finding {
        rule_id: id.into(),
        category: Category::Vulnerability,
        severity,
        confidence: Confidence::High,
        line: span.line.max(1),
        column: span.column.max(1),
        snippet: snippet(source, span),
        explanation: shorten_to(
            &format!("{what} Here: {} (Trojan Source).", hit.detail),
            MAX_EXPLANATION_CHARS,
        ),
        references: vec!["CWE-1007".into(), "CWE-838".into()],
    }
}

/// The source line of a span, trimmed and shortened for a chat message.
pub(super) fn snippet(source: &str, span: Span) -> String {
    let bytes = source.as_bytes();
    let at = span.start_byte.min(bytes.len());
    let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let end = bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| at + p);
    shorten(String::from_utf8_lossy(&bytes[start..end]).trim())
}

pub(super) fn shorten(text: &str) -> String {
    shorten_to(text, MAX_SNIPPET_CHARS)
}

/// Environment variables that make an interpreter run code before the program: the protocol's
/// one list (validation refuses them; if one ever arrives here it is rated as code).
pub(crate) fn is_interpreter_start_variable(name: &str) -> bool {
    airlock_protocol::request::changes_how_code_starts(name)
}
