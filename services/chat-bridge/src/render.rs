//! What an approver sees: one override request rendered as plain text (Matrix `body`, Discord,
//! logs), as HTML (Matrix `formatted_body`) and as Slack blocks. Pure functions of what the
//! bridge knows of the request and the time.
//!
//! Everything shown of the request came from code nobody trusts yet (snippets, labels,
//! arguments): it is escaped for each format, clipped, and can mention nobody (no `@room`,
//! `<!channel>` or `@everyone` reaches a chat as a mention).

use airlock_protocol::{Approver, Finding, Outcome, OverrideAsked, RequestId, Terminal, TrustLevel, text::clip};
use serde::{Deserialize, Serialize};

/// Findings listed in a message; more are counted.
const MAX_FINDINGS: usize = 12;
const MAX_SNIPPET: usize = 160;

/// How a request ended, as the bridge shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ended {
    pub outcome: Outcome,
    /// One line: who decided and why, and what happened then.
    pub summary: String,
}

impl Ended {
    pub fn of(terminal: &Terminal) -> Self {
        let decision = terminal.decision.as_ref();
        let by = decision.map(|d| describe_approver(&d.approver)).unwrap_or_default();
        let decided = decision.map(|d| d.decision.as_str()).unwrap_or("");
        let summary = match terminal.outcome {
            Outcome::Finished => format!(
                "{}; ran and exited with status {}",
                if by.is_empty() {
                    "approved".to_owned()
                } else {
                    format!("approved {by}")
                },
                terminal.exit_code.map_or("unknown".into(), |c| c.to_string())
            ),
            Outcome::Failed => {
                let why = terminal
                    .violation
                    .as_ref()
                    .map(|v| format!("stopped: {} ({})", v.kind.as_str(), v.detail))
                    .or_else(|| terminal.reason.clone())
                    .unwrap_or_else(|| "failed".into());
                if decided == "approved" {
                    format!("approved {by}; {why}")
                } else {
                    why
                }
            }
            Outcome::Denied => match decision.map(|d| &d.approver) {
                Some(Approver::Deadline) => "expired: nobody answered before the deadline".to_owned(),
                _ => format!("denied {by}"),
            },
            Outcome::Expired => format!(
                "expired: {}",
                terminal.reason.clone().unwrap_or_else(|| "past its deadline".into())
            ),
        };
        Self {
            outcome: terminal.outcome,
            summary: clip(summary.trim(), 600),
        }
    }

    /// The word a chat shows first.
    pub fn headline(&self) -> &'static str {
        match (self.outcome, self.summary.starts_with("expired")) {
            (_, true) => "EXPIRED",
            (Outcome::Finished, _) => "APPROVED, RAN",
            (Outcome::Failed, _) if self.summary.starts_with("approved") => "APPROVED, FAILED",
            (Outcome::Failed, _) => "FAILED",
            (Outcome::Denied, _) => "DENIED",
            (Outcome::Expired, _) => "EXPIRED",
        }
    }
}

fn describe_approver(approver: &Approver) -> String {
    match approver {
        Approver::Human {
            who,
            reason,
            seconded_by,
            ..
        } => {
            let mut text = format!("by {who} (\u{201c}{reason}\u{201d})");
            for other in seconded_by {
                text.push_str(&format!(" and {} (\u{201c}{}\u{201d})", other.who, other.reason));
            }
            text
        }
        Approver::Remembered { who, .. } => format!("again (approved earlier by {who})"),
        Approver::Policy { rule } => format!("by policy ({rule})"),
        Approver::Deadline => "at the deadline".into(),
    }
}

/// What the bridge knows of one request.
#[derive(Clone, Debug)]
pub struct View<'a> {
    pub request_id: &'a RequestId,
    pub asked: &'a OverrideAsked,
    pub ended: Option<&'a Ended>,
    /// Approvals relayed so far (two-person rule).
    pub approved_by: &'a [String],
    /// The chat system the message goes to, for "who may answer".
    pub system: &'a str,
    pub escalated: bool,
}

fn quota(q: Option<TrustLevel>) -> &'static str {
    q.map_or("-", |q| q.as_str())
}

fn origin(asked: &OverrideAsked) -> &'static str {
    match asked.origin {
        airlock_protocol::Origin::Generated => "written by Mai",
        airlock_protocol::Origin::External => "external (fetched or pasted)",
    }
}

/// `2026-11-23 18:45:00 UTC`.
pub fn time_of(ms: i64) -> String {
    let secs = u64::try_from(ms / 1000).unwrap_or(0);
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .replace('Z', " UTC")
}

fn minutes_left(deadline_ms: i64, now_ms: i64) -> String {
    let left = (deadline_ms - now_ms).max(0);
    let minutes = left / 60_000;
    if left == 0 {
        "no time left".into()
    } else if minutes == 0 {
        format!("{} s left", left / 1000)
    } else {
        format!("{minutes} min left")
    }
}

/// The first line of the gate's explanation: what the code is, and what it does, in a sentence.
fn headline(asked: &OverrideAsked) -> String {
    clip(asked.explanation.lines().next().unwrap_or_default().trim(), 400)
}

fn findings(asked: &OverrideAsked) -> (Vec<&Finding>, usize) {
    let mut list: Vec<&Finding> = asked.findings.iter().collect();
    list.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.line.cmp(&b.line)));
    let more = list.len().saturating_sub(MAX_FINDINGS);
    list.truncate(MAX_FINDINGS);
    (list, more)
}

fn how_to_answer(view: &View<'_>) -> String {
    let needed = view.asked.approvals_needed.max(1);
    let mut text = format!(
        "Answer with `approve {id} <reason>` or `deny {id} <reason>`, or reply to this message with `approve <reason>` / `deny <reason>`.",
        id = view.request_id
    );
    if needed > 1 {
        text.push_str(&format!(" {needed} different approvers are needed; one deny ends it."));
    }
    if view.asked.approve_again_max_ms > 0 {
        let max = humantime::format_duration(std::time::Duration::from_millis(view.asked.approve_again_max_ms));
        text.push_str(&format!(
            " To approve this exact code again without being asked, end an approval with `--again <duration>` (at most {max})."
        ));
    }
    text
}

fn who_may_answer(view: &View<'_>) -> String {
    match view.asked.approvers.get(view.system) {
        Some(list) if !list.is_empty() => list.join(", "),
        _ => "nobody here (no approvers are configured for this chat)".into(),
    }
}

fn status_line(view: &View<'_>, now_ms: i64) -> String {
    match view.ended {
        Some(ended) => format!("{}: {}", ended.headline(), ended.summary),
        None => {
            let mut line = format!(
                "WAITING: answer by {} ({})",
                time_of(view.asked.deadline_ms),
                minutes_left(view.asked.deadline_ms, now_ms)
            );
            if !view.approved_by.is_empty() {
                line.push_str(&format!(
                    "; approved so far by {} ({} of {})",
                    view.approved_by.join(", "),
                    view.approved_by.len(),
                    view.asked.approvals_needed.max(1)
                ));
            }
            if view.escalated {
                line.push_str("; escalated: half the time has passed");
            }
            line
        }
    }
}

/// Plain text (Markdown-ish): the Matrix `body`, and what Discord shows.
pub fn text(view: &View<'_>, now_ms: i64) -> String {
    let a = view.asked;
    let mut out = format!("Airlock override request {}\n", view.request_id);
    out.push_str(&format!("{}\n", status_line(view, now_ms)));
    out.push_str(&format!("{}\n", headline(a)));
    out.push_str(&format!(
        "Level: {} | origin: {} | quota asked: {} (an approval grants {}) | label: {}\n",
        a.level,
        origin(a),
        quota(a.requested_quota),
        quota(a.approval_quota),
        a.label.as_deref().map(|l| clip(l, 80)).unwrap_or_else(|| "-".into())
    ));
    let (list, more) = findings(a);
    if !list.is_empty() {
        out.push_str("Findings:\n");
        for f in list {
            out.push_str(&format!(
                "- line {} [{} {}] `{}`: {}\n",
                f.line,
                f.severity,
                clip(&f.rule_id, 40),
                clip(f.snippet.trim(), MAX_SNIPPET).replace('`', "'"),
                clip(f.explanation.trim(), 240)
            ));
        }
        if more > 0 {
            out.push_str(&format!("- and {more} more\n"));
        }
    }
    if !a.inputs.is_empty() {
        out.push_str("Given to the program:\n");
    }
    for line in a.inputs.iter().take(8) {
        out.push_str(&format!("- {}\n", clip(line, 200)));
    }
    if view.ended.is_none() {
        out.push_str(&format!("Who may answer: {}\n", who_may_answer(view)));
        out.push_str(&how_to_answer(view));
        out.push('\n');
    }
    out.push_str(&format!(
        "Request id: {} | execution {} | code {} | policy {}",
        view.request_id, a.execution_digest, a.code_digest, a.policy_version
    ));
    out
}

/// HTML-escapes text for a Matrix `formatted_body`.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The Matrix `formatted_body` (`org.matrix.custom.html`), using only tags Matrix clients allow.
pub fn html(view: &View<'_>, now_ms: i64) -> String {
    let a = view.asked;
    let e = |s: &str| escape_html(s);
    let colour = match view.ended.map(|e| e.outcome) {
        None => "#b35900",
        Some(Outcome::Finished) => "#1a7f37",
        Some(_) => "#b3261e",
    };
    let mut out = format!(
        "<h4>Airlock override request <code>{}</code></h4>\n<p><strong><font color=\"{colour}\">{}</font></strong></p>\n<p>{}</p>\n",
        e(view.request_id.as_str()),
        e(&status_line(view, now_ms)),
        e(&headline(a)),
    );
    out.push_str(&format!(
        "<ul><li>Level: <strong>{}</strong></li><li>Origin: {}</li><li>Quota asked: {} (an approval grants {})</li><li>Label: {}</li><li>Deadline: {} ({})</li></ul>\n",
        a.level,
        e(origin(a)),
        quota(a.requested_quota),
        quota(a.approval_quota),
        e(&a.label.as_deref().map(|l| clip(l, 80)).unwrap_or_else(|| "-".into())),
        e(&time_of(a.deadline_ms)),
        e(&minutes_left(a.deadline_ms, now_ms)),
    ));
    let (list, more) = findings(a);
    if !list.is_empty() {
        out.push_str("<p>Findings:</p>\n<ul>");
        for f in list {
            out.push_str(&format!(
                "<li>line {} <strong>[{} {}]</strong> <code>{}</code>: {}</li>",
                f.line,
                f.severity,
                e(&clip(&f.rule_id, 40)),
                e(&clip(f.snippet.trim(), MAX_SNIPPET)),
                e(&clip(f.explanation.trim(), 240))
            ));
        }
        if more > 0 {
            out.push_str(&format!("<li>and {more} more</li>"));
        }
        out.push_str("</ul>\n");
    }
    if !a.inputs.is_empty() {
        out.push_str("<p>Given to the program:</p>\n<ul>");
        for line in a.inputs.iter().take(8) {
            out.push_str(&format!("<li><code>{}</code></li>", e(&clip(line, 200))));
        }
        out.push_str("</ul>\n");
    }
    if !a.code_preview.is_empty() {
        out.push_str(&format!(
            "<details><summary>First lines of the code</summary><pre><code>{}</code></pre></details>\n",
            e(&clip(&a.code_preview, 2048))
        ));
    }
    if view.ended.is_none() {
        out.push_str(&format!(
            "<p>Who may answer: {}</p>\n<p>{}</p>\n",
            e(&who_may_answer(view)),
            markdown_code_to_html(&how_to_answer(view))
        ));
    }
    out.push_str(&format!(
        "<p><sub>Request id: <code>{}</code> · execution <code>{}</code> · code <code>{}</code> · policy {}</sub></p>",
        e(view.request_id.as_str()),
        e(a.execution_digest.as_str()),
        e(a.code_digest.as_str()),
        e(&a.policy_version)
    ));
    out
}

/// `code` spans of the bridge's own help text as HTML (the help holds no outside input).
fn markdown_code_to_html(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<code>{}</code>", escape_html(part)));
        } else {
            out.push_str(&escape_html(part));
        }
    }
    out
}

/// Escapes text for Slack's `mrkdwn` (its documented three characters), and keeps backticks
/// from closing a code span early.
pub fn escape_slack(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "'")
}

/// The Slack message: blocks with Approve and Deny buttons while the request waits.
pub fn slack_blocks(view: &View<'_>, now_ms: i64) -> serde_json::Value {
    let body = escape_slack(&clip(&text(view, now_ms), 2900));
    let mut blocks = vec![serde_json::json!({
        "type": "section",
        "text": { "type": "mrkdwn", "text": body },
    })];
    if view.ended.is_none() {
        blocks.push(serde_json::json!({
            "type": "actions",
            "block_id": "airlock_answer",
            "elements": [
                {
                    "type": "button",
                    "action_id": "airlock_approve",
                    "style": "primary",
                    "text": { "type": "plain_text", "text": "Approve" },
                    "value": view.request_id.as_str(),
                },
                {
                    "type": "button",
                    "action_id": "airlock_deny",
                    "style": "danger",
                    "text": { "type": "plain_text", "text": "Deny" },
                    "value": view.request_id.as_str(),
                },
            ],
        }));
    }
    serde_json::Value::Array(blocks)
}

/// Discord message content (at most 2,000 characters).
pub fn discord_content(view: &View<'_>, now_ms: i64) -> String {
    clip(&text(view, now_ms).replace("@", "@\u{200b}"), 1990)
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::decision::DecisionSummary;
    use airlock_protocol::{Category, CodeDigest, Confidence, Level, Origin};

    fn asked() -> OverrideAsked {
        OverrideAsked {
            level: Level::Blocked,
            explanation: "External python code (fetch.py) rated BLOCKED: downloads a payload and runs it\n- details"
                .into(),
            findings: vec![Finding {
                rule_id: "AIR-PY-DOWNLOAD-EXEC".into(),
                category: Category::MaliciousIntent,
                severity: Level::Blocked,
                confidence: Confidence::High,
                line: 3,
                column: 1,
                snippet: "exec(base64.b64decode(payload)) # <script>@room".into(),
                explanation: "runs code it downloaded".into(),
                references: vec![],
            }],
            code_digest: CodeDigest::of(b"x"),
            origin: Origin::External,
            deadline_ms: 1_795_000_900_000,
            label: Some("fetch.py".into()),
            requested_quota: Some(TrustLevel::Trusted),
            approval_quota: Some(TrustLevel::Untrusted),
            policy_version: "policy-abc".into(),
            approvers: [("matrix".to_owned(), vec!["@alice:localhost".to_owned()])].into(),
            ..OverrideAsked::display_only()
        }
    }

    #[test]
    fn the_message_says_what_an_approver_needs() {
        let rid = RequestId::parse("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").unwrap();
        let a = asked();
        let view = View {
            request_id: &rid,
            asked: &a,
            ended: None,
            approved_by: &[],
            system: "matrix",
            escalated: false,
        };
        let now = 1_795_000_900_000 - 12 * 60_000;
        let t = text(&view, now);
        for needle in [
            rid.as_str(),
            "downloads a payload and runs it",
            "line 3",
            "exec(base64.b64decode(payload))",
            "external",
            "quota asked: trusted",
            "12 min left",
            "2026-11-18 11:21:40 UTC",
            "@alice:localhost",
            "approve 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b <reason>",
        ] {
            assert!(t.contains(needle), "{needle:?} missing from:\n{t}");
        }
        let h = html(&view, now);
        assert!(h.contains("&lt;script&gt;"), "{h}");
        assert!(!h.contains("<script>"), "{h}");
        assert!(h.contains(rid.as_str()));
        let d = discord_content(&view, now);
        assert!(
            !d.contains("@room") && !d.contains("@alice"),
            "mentions are defused: {d}"
        );
        let s = slack_blocks(&view, now).to_string();
        assert!(s.contains("airlock_approve") && s.contains("&lt;script&gt;"), "{s}");
    }

    #[test]
    fn ended_requests_say_who_decided_and_how_it_ended() {
        let mut terminal = Terminal::without_run(Outcome::Finished, "");
        terminal.reason = None;
        terminal.exit_code = Some(0);
        terminal.decision = Some(DecisionSummary {
            decision: "approved".into(),
            approver: Approver::Human {
                who: "@alice:localhost".into(),
                reason: "checked".into(),
                key: "k".into(),
                via: None,
                seconded_by: vec![],
            },
            quota: Some(TrustLevel::Untrusted),
            limits: None,
            runtime: None,
            network: None,
            policy_version: None,
            execution_digest: None,
        });
        let ended = Ended::of(&terminal);
        assert_eq!(ended.headline(), "APPROVED, RAN");
        assert!(
            ended.summary.contains("@alice:localhost") && ended.summary.contains("status 0"),
            "{ended:?}"
        );
        let mut expired = Terminal::without_run(Outcome::Denied, "no answer");
        expired.decision = Some(DecisionSummary {
            decision: "denied".into(),
            approver: Approver::Deadline,
            quota: None,
            limits: None,
            runtime: None,
            network: None,
            policy_version: None,
            execution_digest: None,
        });
        assert_eq!(Ended::of(&expired).headline(), "EXPIRED");
        let rid = RequestId::parse("r1").unwrap();
        let a = asked();
        let e = Ended::of(&terminal);
        let view = View {
            request_id: &rid,
            asked: &a,
            ended: Some(&e),
            approved_by: &[],
            system: "matrix",
            escalated: false,
        };
        let t = text(&view, 0);
        assert!(t.contains("APPROVED, RAN") && !t.contains("Who may answer"), "{t}");
        assert!(!slack_blocks(&view, 0).to_string().contains("airlock_approve"));
    }
}
