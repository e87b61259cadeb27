//! What the bridge says about a request after posting it: its reply to each answer (which request
//! the answer was counted for, quoted so the human can check it is the one they meant), the
//! escalation, a run under a remembered approval, and the result.

use super::doc::{Line, Message};
use super::request::headline;
use super::{Ended, describe_approver};
use airlock_protocol::{OverrideAsked, RequestId};

/// Names the request an answer went to: its id, the first line of its explanation, and the label
/// its requester gave it (as data).
pub fn which_request(rid: &RequestId, asked: &OverrideAsked) -> Line {
    let mut line = Line::new()
        .text("Request ")
        .code(rid.as_str())
        .text(": ")
        .text(headline(asked));
    if let Some(label) = &asked.label {
        line = line.text(" — labelled by the requester ").data(label.clone());
    }
    line.text(".")
}

/// The bot's reply to a human: what became of what they wrote, then, when it went to a request,
/// which one.
pub fn reply(to: &str, verdict: Line, about: Option<(&RequestId, &OverrideAsked)>) -> Message {
    let mut blocks = vec![Line::new().who(to).text(": ").extend(verdict).para()];
    if let Some((rid, asked)) = about {
        blocks.push(which_request(rid, asked).para());
    }
    Message {
        blocks,
        mentions: vec![to.to_owned()],
        ..Message::default()
    }
}

/// Half the time has passed without an answer.
pub fn escalation(rid: &RequestId, asked: &OverrideAsked, mention: &[String]) -> Message {
    let left = Line::new()
        .strong("Escalation")
        .text(format!(
            ": nobody has answered this {} request for half its time; the deadline is ",
            asked.level
        ))
        .time(asked.deadline_ms, true)
        .text(".");
    Message {
        blocks: vec![left.heading(), which_request(rid, asked).para()],
        mentions: mention.to_vec(),
        ..Message::default()
    }
}

/// A request decided by a remembered approval that was given in this chat: "ran again under
/// @alice's approval of 14:02".
pub fn ran_again(rid: &RequestId, ended: &Ended, approved: Option<(&RequestId, &OverrideAsked)>) -> Message {
    let by = ended.approver.as_ref().map(describe_approver).unwrap_or_default();
    let mut blocks = vec![
        Line::new()
            .strong(format!("{}:", ended.headline()))
            .text(" request ")
            .code(rid.as_str())
            .text(" ran ")
            .extend(by)
            .text(" without asking.")
            .heading(),
        Line::new().text("Outcome: ").extend(ended.summary()).text(".").para(),
    ];
    if let Some((approved_rid, asked)) = approved {
        blocks.push(
            Line::new()
                .text("The approval was given for: ")
                .extend(which_request(approved_rid, asked))
                .para(),
        );
    }
    blocks.push(
        Line::new()
            .text("To stop this, revoke it: ")
            .code("airlock override remembered revoke <id>")
            .text(" (")
            .code("airlock override remembered list")
            .text(" shows them).")
            .para(),
    );
    Message::new(blocks)
}

/// The result of a request, in reply to its message, notifying those who answered.
pub fn result(rid: &RequestId, asked: &OverrideAsked, ended: &Ended, notify: &[String]) -> Message {
    let mut blocks = vec![
        Line::new()
            .strong(ended.headline())
            .text(": ")
            .extend(ended.summary_with_observed())
            .text(".")
            .heading(),
        which_request(rid, asked).para(),
    ];
    if !ended.stderr_head.is_empty() {
        blocks.push(Line::new().text("First lines of its error output:").para());
        blocks.push(super::Block::Code(super::CodeView {
            lines: ended
                .stderr_head
                .iter()
                .enumerate()
                .map(|(i, l)| super::CodeLine::Line {
                    number: i + 1,
                    text: l.clone(),
                    flagged: false,
                })
                .collect(),
        }));
    }
    Message {
        blocks,
        mentions: notify.to_vec(),
        ..Message::default()
    }
}

/// A short message of Airlock's own (a test message, a help text).
pub fn said(line: Line) -> Message {
    Message::new(vec![line.para()])
}
