//! Findings: from a rule's match, a threat list hit, an analysis cut short, or the request's
//! environment; and the bounds that keep an assessment small whatever the code.

use super::Engine;
use crate::facts::Span;
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

impl Engine {
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
        if severity == Level::Blocked && rule.confidence < self.config.blocked_min_confidence {
            severity = Level::High;
            explanation
                .push_str(" Rated HIGH rather than BLOCKED: the rule's confidence is below the configured minimum.");
        }
        Finding {
            rule_id: rule.id.clone(),
            category: rule.category,
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
                self.threats.version, hit.description, hit.value
            ),
            references: vec![],
        }
    }

    /// Analysis that stopped before the end (size, depth, time) fails closed: what was not
    /// analysed could hide anything, so external code goes to a human (BLOCKED) and code Mai
    /// generated is rated HIGH, whatever was found before the stop.
    pub(super) fn cut_short_finding(&self, id: &str, reason: &str, origin: Origin) -> Finding {
        let floor = match origin {
            Origin::External => Level::Blocked,
            Origin::Generated => Level::High,
        };
        let mut finding = self.input_finding(id, reason, Span::default(), "");
        finding.severity = finding.severity.max(floor);
        finding.explanation = format!(
            "The analysis was cut short: {reason}. What was not analysed could hide anything, so the code is \
             rated as if it did ({}).",
            match origin {
                Origin::External => "BLOCKED for external code: a human decides",
                Origin::Generated => "HIGH for code Mai generated",
            }
        );
        finding
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

    pub(super) fn input_finding(&self, id: &str, reason: &str, span: Span, snippet: &str) -> Finding {
        Finding {
            rule_id: id.into(),
            category: Category::Input,
            severity: self.config.unanalysed_level,
            confidence: Confidence::High,
            line: span.line.max(1),
            column: span.column.max(1),
            snippet: snippet.into(),
            explanation: format!(
                "The code could not be fully analysed: {reason}. A human should look at it before it runs."
            ),
            references: vec![],
        }
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

/// At most `limit` characters (never a cut inside a UTF-8 sequence), with an ellipsis when cut.
pub(crate) fn shorten_to(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_string(),
        Some(_) => {
            let mut short: String = text.chars().take(limit.saturating_sub(1)).collect();
            short.push('…');
            short
        }
    }
}

/// Environment variables that make an interpreter run code before the program: the protocol's
/// one list (validation refuses them; if one ever arrives here it is rated as code).
pub(crate) fn is_interpreter_start_variable(name: &str) -> bool {
    airlock_protocol::request::changes_how_code_starts(name)
}
