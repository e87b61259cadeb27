//! `airlock override ...`: the command-line chat bridge. Lists requests waiting for a human and
//! answers them with an answer signed by the operator's approver key; the work is the client
//! library's (`airlock_client::overrides`), this is its command line.

use crate::home::Home;
use crate::run::status;
use airlock_client::{AnswerOutcome, Client, ClientError, PendingOverride};
use airlock_protocol::{Finding, Origin, RequestId, now_ms};
use std::process::ExitCode;

#[derive(Clone, Debug, clap::Subcommand)]
pub enum OverrideCommand {
    /// Requests waiting for a human: each with its code's first lines and every finding.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Let a request run (with the override quota).
    Approve(Answer),
    /// Refuse a request.
    Deny(Answer),
    /// Approvals humans chose to remember ("approve this exact execution again").
    #[command(subcommand)]
    Remembered(RememberedCommand),
    /// Approval health from the audit log: prompts per 100 runs, approval and denial rates,
    /// time to first answer, expiries, escalations, and each approver's share.
    Stats(crate::override_stats::StatsArgs),
}

#[derive(Clone, Debug, clap::Subcommand)]
pub enum RememberedCommand {
    /// Each remembered approval: what it covers, who gave it, until when, and whether it still
    /// holds under the policy in force.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke one remembered approval (by its id, or an unambiguous prefix), or all of them.
    Revoke {
        /// The approval's id (from `list`).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        #[arg(long)]
        all: bool,
        /// Why; recorded in the audit log.
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        identity: Identity,
    },
}

#[derive(Clone, Debug, clap::Args)]
pub struct Answer {
    pub request_id: RequestId,
    /// Why; recorded in the decision and the audit log (required, not blank).
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub identity: Identity,
    /// Approve this exact execution (code, inputs, packages, client, grant) again without
    /// asking, for this long (`4h`; at most the policy's `approve_again_max`).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub again: Option<std::time::Duration>,
}

/// Who answers: an operator with a key of their own (verified by the gate), or a typed name
/// with the shared approver key.
#[derive(Clone, Debug, clap::Args)]
pub struct Identity {
    /// Answer as this operator, signing with their own key (`airlock keys add-operator NAME`):
    /// the gate records the answer as NAME's, verified.
    #[arg(long, env = "AIRLOCK_OPERATOR")]
    pub operator: Option<String>,
    /// Who answers, with the shared approver key (default: $USER). Not verified: under the
    /// two-person rule such an answer cannot be one of the two.
    #[arg(long, conflicts_with = "operator")]
    pub who: Option<String>,
}

pub async fn run(home: &Home, command: OverrideCommand) -> anyhow::Result<ExitCode> {
    // Usage mistakes are refused before anything is sent (or even connected).
    let checked = match &command {
        OverrideCommand::Approve(answer) | OverrideCommand::Deny(answer) => {
            Some((answer.reason.as_str(), &answer.identity))
        }
        OverrideCommand::Remembered(RememberedCommand::Revoke { reason, identity, .. }) => {
            Some((reason.as_str(), identity))
        }
        _ => None,
    };
    if let Some((reason, identity)) = checked {
        if reason.trim().is_empty() {
            return Ok(usage(ClientError::EmptyReason));
        }
        if identity.who.as_deref().is_some_and(|w| w.trim().is_empty()) {
            return Ok(usage(ClientError::EmptyWho));
        }
        if let Some(operator) = &identity.operator
            && !home.stack().operator_key(operator).exists()
        {
            eprintln!(
                "airlock override: no key for operator {operator:?} ({}); make one with `airlock keys add-operator {operator}`",
                home.stack().operator_key(operator).display()
            );
            return Ok(ExitCode::from(status::USAGE));
        }
    }
    match command {
        OverrideCommand::List { json } => list(&connect(home).await?, json).await,
        OverrideCommand::Approve(answer) => answer_request(&connect(home).await?, answer, true).await,
        OverrideCommand::Deny(answer) => answer_request(&connect(home).await?, answer, false).await,
        OverrideCommand::Remembered(command) => remembered(&connect(home).await?, command).await,
        // Read from the audit log's store: no bus needed.
        OverrideCommand::Stats(args) => crate::override_stats::stats(home, args).await,
    }
}

async fn list(client: &Client, json: bool) -> anyhow::Result<ExitCode> {
    let pending = client.pending_overrides().await?;
    if json {
        println!("{}", serde_json::to_string(&pending)?);
    } else if pending.is_empty() {
        println!("no requests are waiting for a decision");
    } else {
        let now = now_ms();
        let text: Vec<String> = pending.iter().map(|p| show(p, now)).collect();
        print!("{}", text.join("\n"));
    }
    Ok(ExitCode::SUCCESS)
}

async fn remembered(client: &Client, command: RememberedCommand) -> anyhow::Result<ExitCode> {
    match command {
        RememberedCommand::List { json } => {
            let list = client.remembered_approvals().await?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else if list.is_empty() {
                println!("no approvals are remembered");
            } else {
                let now = now_ms();
                for r in &list {
                    print!("{}", show_remembered(r, now));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        RememberedCommand::Revoke {
            id,
            all: _,
            reason,
            identity,
        } => {
            let client = as_identity(client, &identity);
            let who = identity.who.clone().unwrap_or_else(|| client.answering_as());
            match client.revoke_remembered(id.as_deref(), &who, &reason).await {
                Ok(ids) if ids.is_empty() => {
                    println!("no approvals were remembered");
                    Ok(ExitCode::SUCCESS)
                }
                Ok(ids) => {
                    for id in ids {
                        println!("revoked {id}");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(e @ ClientError::GateRefused { .. }) => Ok(usage(e)),
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// One remembered approval as text.
fn show_remembered(r: &airlock_client::RememberedApproval, now_ms: i64) -> String {
    let left = (r.until_ms - now_ms).max(0) / 1000;
    let mut out = format!(
        "{}  {}  {}  approved by {} for {} ({}s left)\n",
        r.id,
        r.level,
        printable(r.label.as_deref().unwrap_or("-")),
        printable(&r.approvers.join(" and ")),
        r.approved_request,
        left
    );
    out.push_str(&format!("    reason: {}\n", printable(&r.reason)));
    out.push_str(&format!(
        "    covers execution {} (code {}) for client {}\n",
        r.execution_digest,
        r.code_digest,
        r.client.as_deref().unwrap_or("-")
    ));
    if let Some(void) = &r.void {
        out.push_str(&format!("    no longer used: {}\n", printable(void)));
    }
    out
}

/// The client answering as `identity` says: an operator's own key, else the shared one.
fn as_identity(client: &Client, identity: &Identity) -> Client {
    match &identity.operator {
        Some(operator) => client.clone().as_operator(operator.clone()),
        None => client.clone(),
    }
}

/// The client, as the operator, over a connection made the way every command connects: the
/// stack's URL(s), or the deployment's, with its TLS.
async fn connect(home: &Home) -> anyhow::Result<Client> {
    let user = airlock_protocol::roles::OPERATOR.user;
    let nats = crate::stack::connect(home, user).await?;
    Ok(Client::from_connection(nats, user, home.stack()))
}

fn usage(error: ClientError) -> ExitCode {
    eprintln!("airlock override: {error}");
    ExitCode::from(status::USAGE)
}

async fn answer_request(client: &Client, answer: Answer, approve: bool) -> anyhow::Result<ExitCode> {
    let rid = &answer.request_id;
    let client = as_identity(client, &answer.identity);
    let who = answer.identity.who.as_deref();
    let answered = match (approve, answer.again) {
        (true, Some(again)) => client.approve_override_again(rid, &answer.reason, who, again).await,
        (false, Some(_)) => {
            eprintln!("airlock override: --again goes with approve only");
            return Ok(ExitCode::from(status::USAGE));
        }
        (_, None) => client.answer_override(rid, approve, &answer.reason, who).await,
    };
    match answered {
        Ok(AnswerOutcome::Decided { approved }) => {
            println!("{rid}: {}", if approved { "approved" } else { "denied" });
            Ok(ExitCode::SUCCESS)
        }
        Ok(AnswerOutcome::Counted { needed, approved_by }) => {
            println!(
                "{rid}: approval counted; {needed} different approvers are needed, waiting for another (approved so far by: {})",
                approved_by.join(", ")
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(
            e @ (ClientError::EmptyReason
            | ClientError::EmptyWho
            | ClientError::NotPending { .. }
            | ClientError::NotTheKeysPerson { .. }),
        ) => Ok(usage(e)),
        Err(e @ ClientError::AnswerRefused { .. }) => {
            eprintln!("{e}");
            Ok(ExitCode::from(status::DENIED))
        }
        Err(e @ ClientError::Unconfirmed { .. }) => {
            eprintln!("{e}");
            Ok(ExitCode::from(status::AIRLOCK_FAILED))
        }
        Err(e) => Err(e.into()),
    }
}

/// One pending request as text: what it is and how long is left, why it is asked, the code's
/// first lines, every finding, what it is given besides its code, and who has approved.
fn show(p: &PendingOverride, now_ms: i64) -> String {
    let asked = &p.asked;
    let mut out = format!(
        "{}  {}  {}  ({}s left to answer)\n",
        p.request_id,
        asked.level,
        printable(asked.label.as_deref().unwrap_or("-")),
        (asked.deadline_ms - now_ms).max(0) / 1000
    );
    for line in asked.explanation.lines() {
        out.push_str(&format!("    {}\n", printable(line)));
    }
    let origin = match asked.origin {
        Origin::Generated => "Mai-generated",
        Origin::External => "external",
    };
    out.push_str(&format!(
        "    code ({origin} {}, first lines):\n",
        asked.language.as_str()
    ));
    let lines: Vec<&str> = asked.code_preview.lines().collect();
    let width = lines.len().to_string().len();
    for (i, line) in lines.iter().enumerate() {
        if i + 1 == lines.len() && *line == "..." {
            // The gate's mark that the preview stops before the code does.
            out.push_str(&format!("      {:>width$}   ...\n", ""));
        } else {
            out.push_str(&format!(
                "      {:>width$} | {}\n",
                i + 1,
                airlock_protocol::text::visible_block(line)
            ));
        }
    }
    if lines.is_empty() {
        out.push_str("      (empty)\n");
    }
    out.push_str(&format!("    findings ({}):\n", asked.findings.len()));
    for finding in &asked.findings {
        out.push_str(&show_finding(finding));
    }
    if !asked.inputs.is_empty() {
        out.push_str("    inputs:\n");
        for input in &asked.inputs {
            out.push_str(&format!("      {}\n", printable(input)));
        }
    }
    if !p.chats_refused.is_empty() {
        let nowhere = asked.approvers.keys().all(|system| p.chats_refused.contains(system));
        out.push_str(&format!(
            "    refused for good by: {}{}\n",
            printable(&p.chats_refused.join(", ")),
            if nowhere {
                " (no chat has it: answer it here)"
            } else {
                ""
            }
        ));
    }
    if asked.approvals_needed > 1 {
        out.push_str(&format!(
            "    needs {} different approvers; approved so far by: {}\n",
            asked.approvals_needed,
            if p.approved_by.is_empty() {
                "nobody".to_owned()
            } else {
                printable(&p.approved_by.join(", "))
            }
        ));
    }
    out
}

fn show_finding(f: &Finding) -> String {
    let mut out = format!(
        "      line {}  {}  {}  `{}`\n",
        f.line,
        f.severity,
        printable(&f.rule_id),
        printable(&f.snippet)
    );
    for line in f.explanation.lines() {
        out.push_str(&format!("          {}\n", printable(line)));
    }
    out
}

/// `text` safe to print in the operator's terminal: the code and its findings are Mai's (or a
/// stranger's), and control characters or bidirectional overrides could make the code shown
/// differ from the code approved. Every one of them is shown as `⟨U+…⟩`.
fn printable(text: &str) -> String {
    airlock_protocol::text::visible_line(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::{Category, Confidence, Level, OverrideAsked};

    fn finding(line: u32, rule: &str) -> Finding {
        Finding {
            rule_id: rule.into(),
            category: Category::MaliciousIntent,
            severity: Level::Blocked,
            confidence: Confidence::High,
            line,
            column: 1,
            snippet: "exec(base64.b64decode(payload))".into(),
            explanation: "runs code it decodes".into(),
            references: vec![],
        }
    }

    #[test]
    fn a_pending_request_shows_its_code_and_every_finding() {
        let pending = PendingOverride {
            request_id: RequestId::new(),
            asked: OverrideAsked {
                explanation: "External python code rated BLOCKED: downloads and runs code\n- line 3 ...".into(),
                findings: vec![finding(3, "AIR-PY-EXEC-DECODED"), finding(2, "AIR-PY-NET-FETCH")],
                code_preview: "import base64\npayload = 1\nexec(x)\n...\n".into(),
                inputs: vec!["arguments: \"--fast\"".into()],
                deadline_ms: 61_000,
                label: Some("evil\u{1b}[2J.py".into()),
                approvals_needed: 2,
                ..OverrideAsked::display_only()
            },
            approved_by: vec!["alice".into()],
            chats_refused: vec!["slack".into()],
        };
        let text = show(&pending, 1_000);
        assert!(
            text.contains("    refused for good by: slack (no chat has it: answer it here)\n"),
            "{text}"
        );
        assert!(
            text.contains("BLOCKED  evil⟨U+001B⟩[2J.py  (60s left to answer)"),
            "{text}"
        );
        assert!(text.contains("      1 | import base64\n"), "{text}");
        assert!(text.contains("      3 | exec(x)\n          ...\n"), "{text}");
        assert!(text.contains("findings (2):"), "{text}");
        assert!(text.contains("line 3  BLOCKED  AIR-PY-EXEC-DECODED  `exec(base64.b64decode(payload))`"));
        assert!(text.contains("line 2  BLOCKED  AIR-PY-NET-FETCH"), "{text}");
        assert!(text.contains("          runs code it decodes\n"), "{text}");
        assert!(text.contains("    inputs:\n      arguments: \"--fast\"\n"), "{text}");
        assert!(
            text.contains("needs 2 different approvers; approved so far by: alice"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn bidirectional_overrides_are_shown_escaped() {
        assert_eq!(printable("a\u{202E}b\tc"), "a⟨U+202E⟩b⟨U+0009⟩c");
    }
}
