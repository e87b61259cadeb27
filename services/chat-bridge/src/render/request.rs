//! The message of one override request: what the code would do in plain words and how it is
//! rated, how long is left, what the sandbox would allow it, the findings, the code with its line
//! numbers (dangerous lines shown even past the preview), what it is given, who may answer and
//! how. Every piece the requester chose (the label, the code, snippets, inputs) is data.

use super::Ended;
use super::doc::{Block, CodeLine, CodeView, Line, Message};
use airlock_protocol::{EarlierRelation, Finding, Level, NetworkMode, OverrideAsked, RequestId, Runtime};
use std::collections::BTreeSet;

/// Findings listed in a message; more are counted.
const MAX_FINDINGS: usize = 12;
/// Inputs listed.
const MAX_INPUTS: usize = 8;

/// What the bridge knows of one request, for one chat.
#[derive(Clone, Debug)]
pub struct View<'a> {
    pub request_id: &'a RequestId,
    pub asked: &'a OverrideAsked,
    pub ended: Option<&'a Ended>,
    /// Approvals relayed so far (two-person rule).
    pub approved_by: &'a [String],
    /// The chat system the message goes to: says who may answer there, and how.
    pub system: &'a str,
    pub escalated: bool,
    /// The link to the request's whole-code page, when the bridge serves them.
    pub code_page: Option<String>,
}

impl View<'_> {
    /// Who may answer this request in this chat.
    pub fn approvers(&self) -> &[String] {
        self.asked
            .approvers
            .get(self.system)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// The assessor's plain words for what the code does (`What it does: …` in the gate's
/// explanation), else the explanation's first line.
pub fn what_it_does(asked: &OverrideAsked) -> Option<String> {
    asked
        .explanation
        .lines()
        .find_map(|l| l.trim().strip_prefix("What it does:"))
        .map(|w| w.trim().trim_end_matches('.').to_owned())
        .filter(|w| !w.is_empty())
}

/// The first line of the gate's explanation: what is asked about, in a sentence.
pub fn headline(asked: &OverrideAsked) -> String {
    airlock_protocol::text::clip(asked.explanation.lines().next().unwrap_or_default().trim(), 400)
}

fn origin(asked: &OverrideAsked) -> &'static str {
    match asked.origin {
        airlock_protocol::Origin::Generated => "written by Mai",
        airlock_protocol::Origin::External => "from outside",
    }
}

/// The first line: what it would do, then the level and origin.
fn first_line(asked: &OverrideAsked) -> Line {
    let what = format!("{} {} code {}", asked.level, asked.language.as_str(), origin(asked));
    match what_it_does(asked) {
        Some(does) => Line::new().strong(capitalised(&does)).text(format!(" — {what}")),
        None => Line::new().strong(headline(asked)),
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= 1024 * MIB && n.is_multiple_of(1024 * MIB) {
        format!("{} GiB", n / (1024 * MIB))
    } else {
        format!("{} MiB", n.div_ceil(MIB))
    }
}

/// What the sandbox would allow the code if approved.
pub fn sandbox(asked: &OverrideAsked) -> Option<Line> {
    let grant = asked.grant.as_ref()?;
    let l = grant.limits;
    let network = match grant.network {
        NetworkMode::None => "no network".to_owned(),
        NetworkMode::ReadOnly => read_only_network(&asked.read_only_hosts),
    };
    let cpu = f64::from(l.cpu_millis) / 1000.0;
    let runtime = match grant.runtime {
        Runtime::Runc => "runc",
        Runtime::Runsc => "gVisor",
    };
    Some(Line::new().text(format!(
        "{network}, {cpu} CPU, {} memory, {} s, {} processes, {} scratch disk, no host files ({} quota, {runtime})",
        bytes(l.memory_bytes),
        l.wall_ms.div_ceil(1000),
        l.pids,
        bytes(l.disk_bytes),
        grant.quota.as_str(),
    )))
}

/// Hosts named in the sandbox line; more are counted.
const MAX_HOSTS: usize = 6;

/// Read-only internet as the approver needs it: the methods, the way out, and where to.
fn read_only_network(hosts: &[String]) -> String {
    if hosts.is_empty() {
        return "read-only internet (GET/HEAD to allow-listed hosts, through Airlock's proxy)".into();
    }
    let mut named: Vec<String> = hosts
        .iter()
        .take(MAX_HOSTS)
        .map(|h| airlock_protocol::text::visible_line(h))
        .collect();
    if hosts.len() > MAX_HOSTS {
        named.push(format!("{} more", hosts.len() - MAX_HOSTS));
    }
    format!(
        "read-only internet (GET/HEAD only, through Airlock's proxy, to: {})",
        named.join(", ")
    )
}

fn findings(asked: &OverrideAsked) -> (Vec<&Finding>, usize) {
    let mut list: Vec<&Finding> = asked.findings.iter().collect();
    list.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.line.cmp(&b.line)));
    let more = list.len().saturating_sub(MAX_FINDINGS);
    list.truncate(MAX_FINDINGS);
    (list, more)
}

/// The preview's lines, numbered, with the lines findings point at: flagged where shown, and
/// shown from the finding's snippet when past the preview.
pub fn code_view(asked: &OverrideAsked) -> CodeView {
    let flagged: BTreeSet<usize> = asked
        .findings
        .iter()
        .filter(|f| f.severity >= Level::Medium)
        .map(|f| f.line as usize)
        .collect();
    let mut lines = Vec::new();
    let mut cut = false;
    let mut last = 0;
    for (i, text) in asked.code_preview.lines().enumerate() {
        // The gate marks a preview it cut with a last line of `...`.
        if text == "..." {
            cut = true;
            break;
        }
        last = i + 1;
        lines.push(CodeLine::Line {
            number: last,
            text: text.to_owned(),
            flagged: flagged.contains(&last),
        });
    }
    if !cut {
        return CodeView { lines };
    }
    let mut past: Vec<&Finding> = asked
        .findings
        .iter()
        .filter(|f| (f.line as usize) > last && f.severity >= Level::Medium)
        .collect();
    past.sort_by_key(|f| f.line);
    past.dedup_by_key(|f| f.line);
    for f in past.into_iter().take(MAX_FINDINGS) {
        let number = f.line as usize;
        if number > last + 1 {
            lines.push(CodeLine::Skipped {
                from: last + 1,
                to: Some(number - 1),
            });
        }
        lines.push(CodeLine::Line {
            number,
            text: f.snippet.clone(),
            flagged: true,
        });
        last = number;
    }
    lines.push(CodeLine::Skipped {
        from: last + 1,
        to: None,
    });
    CodeView { lines }
}

/// Diff lines shown; the rest are counted.
const MAX_DIFF_LINES: usize = 40;

/// The earlier request the approver should know of: the one this revises (how it was decided,
/// and what changed), or the same code decided before. Times are absolute: the message is
/// edited to a final, timeless state later.
fn earlier(asked: &OverrideAsked) -> Vec<Block> {
    let Some(earlier) = &asked.earlier else {
        return vec![];
    };
    let id = earlier.request_id.as_str();
    let mut line = match earlier.relation {
        EarlierRelation::Revises => Line::new().strong("A revision: ").text("it revises request ").code(id),
        EarlierRelation::SameCode => Line::new()
            .strong("Seen before: ")
            .text("the same code was request ")
            .code(id),
    };
    if let Some(decision) = &earlier.decision {
        line = line
            .text(if decision.approved { ", approved " } else { ", denied " })
            .extend(super::describe_approver(&decision.approver))
            .text(" at ")
            .time(decision.at_ms, false);
        if asked.asked_at_ms > decision.at_ms {
            let gap = super::relative(decision.at_ms, asked.asked_at_ms);
            line = line.text(format!(" ({} before this request)", gap.trim_end_matches(" ago")));
        }
        if !decision.reason.is_empty() {
            line = line.text(" (").data(decision.reason.clone()).text(")");
        }
    }
    if let Some(missing) = &earlier.missing {
        line = line.text(": ").text(missing.clone());
    }
    let mut blocks = vec![line.text(".").para()];
    match earlier.diff.as_deref() {
        Some("") => blocks.push(
            Line::new()
                .text("Its code is unchanged (what it is given may differ).")
                .para(),
        ),
        Some(diff) => {
            blocks.push(Line::new().text("What changed in the code since then:").para());
            let all: Vec<&str> = diff.lines().collect();
            let mut lines: Vec<CodeLine> = all
                .iter()
                .take(MAX_DIFF_LINES)
                .map(|l| CodeLine::Unnumbered((*l).to_owned()))
                .collect();
            if all.len() > MAX_DIFF_LINES {
                lines.push(CodeLine::Unnumbered(format!(
                    "… {} more lines of the diff",
                    all.len() - MAX_DIFF_LINES
                )));
            }
            blocks.push(Block::Code(CodeView { lines }));
        }
        None => {}
    }
    blocks
}

/// How to answer in this chat: only what works there.
fn how_to_answer(view: &View<'_>) -> Vec<Line> {
    let rid = view.request_id.as_str();
    let mut lines = match view.system {
        "matrix" => vec![
            Line::new()
                .text("To answer, reply to this message with ")
                .code("approve <reason>")
                .text(" or ")
                .code("deny <reason>")
                .text(", or write ")
                .code(format!("approve {rid} <reason>"))
                .text(" in the room."),
        ],
        "slack" | "discord" => {
            vec![Line::new().text("To answer, use the Approve or Deny button below: a dialog asks for the reason.")]
        }
        _ => vec![
            Line::new()
                .text("To answer, send a signed answer naming ")
                .code(rid)
                .text("."),
        ],
    };
    let needed = view.asked.approvals_needed.max(1);
    if needed > 1 {
        lines.push(Line::new().text(format!("{needed} different people must approve; one deny ends it.")));
    }
    if view.asked.approve_again_max_ms > 0 {
        let max = humantime::format_duration(std::time::Duration::from_millis(view.asked.approve_again_max_ms));
        let how = match view.system {
            "matrix" => Line::new().text(", end an approval with ").code("--again <duration>"),
            _ => Line::new().text(", choose it in the approval dialog"),
        };
        lines.push(
            Line::new()
                .text("To approve this exact execution again without being asked")
                .extend(how)
                .text(format!(" (at most {max}).")),
        );
    }
    lines
}

fn status(view: &View<'_>) -> Line {
    match view.ended {
        Some(ended) => Line::new()
            .strong(ended.headline())
            .text(": ")
            .extend(ended.summary_with_observed()),
        None => {
            let mut line = Line::new()
                .strong("WAITING")
                .text(" for an answer until ")
                .time(view.asked.deadline_ms, true);
            if !view.approved_by.is_empty() {
                line = line
                    .text("; approved so far by ")
                    .people(view.approved_by)
                    .text(format!(
                        " ({} of {})",
                        view.approved_by.len(),
                        view.asked.approvals_needed.max(1)
                    ));
            }
            if view.escalated {
                line = line.text("; escalated: half the time has passed");
            }
            line.text(".")
        }
    }
}

/// The whole message for one request, as it should read now.
pub fn request_message(view: &View<'_>) -> Message {
    let a = view.asked;
    let mut blocks = vec![first_line(a).heading(), status(view).para()];
    let mut about = Line::new().text("Request ").code(view.request_id.as_str());
    if let Some(label) = &a.label {
        about = about.text(", labelled by the requester ").data(label.clone());
    }
    blocks.push(about.text(".").para());
    blocks.extend(earlier(a));
    if let Some(allowed) = sandbox(a) {
        blocks.push(
            Line::new()
                .text("If approved, the sandbox allows it: ")
                .extend(allowed)
                .text(".")
                .para(),
        );
    }
    let (list, more) = findings(a);
    if !list.is_empty() {
        blocks.push(Line::new().text("Findings:").para());
        let mut items: Vec<Vec<_>> = list
            .iter()
            .map(|f| {
                Line::new()
                    .text(format!("line {} ", f.line))
                    .strong(f.severity.as_str())
                    .text(" ")
                    .code(f.rule_id.clone())
                    .text(" ")
                    .data(f.snippet.trim())
                    .text(format!(" — {}", f.explanation.trim()))
                    .0
            })
            .collect();
        if more > 0 {
            items.push(Line::new().text(format!("and {more} more")).0);
        }
        blocks.push(Block::Bullets(items));
    }
    let code = code_view(a);
    if !code.lines.is_empty() {
        blocks.push(Line::new().text("The code (▶ marks lines with findings):").para());
        blocks.push(Block::Code(code));
    }
    if let Some(url) = &view.code_page {
        let lines = String::from_utf8_lossy(&a.code).lines().count();
        blocks.push(
            Line::new()
                .text(format!("The whole code, {lines} lines: "))
                .link("open it", url.clone())
                .text(" (the link lapses an hour after the deadline).")
                .para(),
        );
    }
    if !a.inputs.is_empty() {
        blocks.push(Line::new().text("Given to the program:").para());
        blocks.push(Block::Bullets(
            a.inputs
                .iter()
                .take(MAX_INPUTS)
                .map(|i| Line::new().data(i.clone()).0)
                .collect(),
        ));
    }
    if view.ended.is_none() {
        blocks.push(
            Line::new()
                .text("Who may answer here: ")
                .people(view.approvers())
                .text(".")
                .para(),
        );
        blocks.extend(how_to_answer(view).into_iter().map(Line::para));
    }
    blocks.push(
        Line::new()
            .text("Execution ")
            .code(a.execution_digest.as_str())
            .text(" · code ")
            .code(a.code_digest.as_str())
            .text(format!(" · policy {}", a.policy_version))
            .para(),
    );
    Message {
        blocks,
        buttons: view.ended.is_none().then(|| view.request_id.clone()),
        ..Message::default()
    }
}
