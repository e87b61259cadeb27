//! A message as Slack Block Kit: `section` blocks of `mrkdwn` text, each at most 3,000 characters
//! *after* escaping, at most 50 blocks with the answer buttons. Slack's markup has three
//! significant characters (`&`, `<`, `>`), escaped everywhere; data from outside is shown in
//! inline code (deceptive characters made visible, a backtick shown as `ˋ` so that it cannot end
//! the span), code in a fenced block (a run of three backticks shown as `ˋˋˋ`).

use super::doc::{Block, CodeView, Message, Span};
use super::plain::{code_line, number_width};
use super::{MAX_DATA, relative, time_of};
use airlock_protocol::text::{clip, visible_line};
use serde_json::{Value, json};

/// Slack's limit on a section's text, in characters.
pub const SECTION_TEXT_MAX: usize = 3000;
/// Slack's limit on blocks in a message.
pub const MAX_BLOCKS: usize = 50;

/// Escapes Slack's three significant characters.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// One line of outside text, as inline code.
pub fn data(text: &str) -> String {
    let shown = clip(&visible_line(text), MAX_DATA);
    if shown.is_empty() {
        return "(empty)".into();
    }
    format!("`{}`", escape(&shown).replace('`', "ˋ"))
}

/// A Slack user (`U…`/`W…`) as a mention Slack shows by name; anything else as data.
pub fn who(identity: &str) -> String {
    let is_user = identity.len() <= 32
        && identity.starts_with(['U', 'W'])
        && identity.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    if is_user {
        format!("<@{identity}>")
    } else {
        data(identity)
    }
}

/// Slack's date formatting: shown in each reader's own time zone, with a UTC fallback.
fn time(at_ms: i64) -> String {
    format!(
        "<!date^{}^{{date_short_pretty}} {{time}}|{}>",
        at_ms.div_euclid(1000),
        escape(&time_of(at_ms))
    )
}

pub fn spans(spans: &[Span], now_ms: i64) -> String {
    let mut out = String::new();
    for span in spans {
        match span {
            Span::Text(t) => out.push_str(&escape(t)),
            Span::Strong(t) => out.push_str(&format!("*{}*", escape(t))),
            Span::Code(t) => out.push_str(&format!("`{}`", escape(&visible_line(t)).replace('`', "ˋ"))),
            Span::Data(t) => out.push_str(&data(t)),
            Span::Who(w) => out.push_str(&who(w)),
            Span::Time { at_ms, relative: rel } => {
                out.push_str(&time(*at_ms));
                if *rel {
                    out.push_str(&format!(" ({})", escape(&relative(*at_ms, now_ms))));
                }
            }
            Span::Link { label, url } => {
                out.push_str(&format!("<{}|{}>", escape(url), escape(label).replace('|', "¦")));
            }
        }
    }
    out
}

fn section(text: String) -> Value {
    json!({ "type": "section", "text": { "type": "mrkdwn", "text": text } })
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Lines grouped into texts of at most `max` characters (with `wrap` added around each group);
/// a line longer than that alone is cut with a marker.
fn group(lines: Vec<String>, max: usize, wrap: (&str, &str)) -> Vec<String> {
    let overhead = chars(wrap.0) + chars(wrap.1);
    let mut groups = Vec::new();
    let mut current = String::new();
    for line in lines {
        let line = if chars(&line) + overhead > max {
            cut_chars(&line, max - overhead - 1) + "…"
        } else {
            line
        };
        if !current.is_empty() && chars(&current) + 1 + chars(&line) + overhead > max {
            groups.push(format!("{}{}{}", wrap.0, current, wrap.1));
            current.clear();
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(&line);
    }
    if !current.is_empty() {
        groups.push(format!("{}{}{}", wrap.0, current, wrap.1));
    }
    groups
}

/// The first `n` characters, never inside an escape (`&amp;`).
fn cut_chars(text: &str, n: usize) -> String {
    let mut cut: String = text.chars().take(n).collect();
    if let Some(amp) = cut.rfind('&')
        && !cut[amp..].contains(';')
    {
        cut.truncate(amp);
    }
    cut
}

fn code_lines(code: &CodeView) -> Vec<String> {
    let width = number_width(code);
    code.lines
        .iter()
        .map(|l| escape(&code_line(l, width)).replace("```", "ˋˋˋ"))
        .collect()
}

/// The message's blocks, with Approve and Deny buttons while its request waits.
pub fn blocks(message: &Message, now_ms: i64) -> Vec<Value> {
    let mut texts: Vec<String> = Vec::new();
    let mut mentions: Vec<String> = message.mentions_to_write().into_iter().map(|m| who(m)).collect();
    if message.mention_room {
        mentions.insert(0, "<!here>".into());
    }
    for (i, block) in message.blocks.iter().enumerate() {
        match block {
            Block::Heading(s) => {
                let mut text = spans(s, now_ms);
                if i == 0 && !mentions.is_empty() {
                    text = format!("{} {text}", mentions.join(" "));
                }
                texts.extend(group(vec![text], SECTION_TEXT_MAX, ("", "")));
            }
            Block::Para(s) => texts.extend(group(vec![spans(s, now_ms)], SECTION_TEXT_MAX, ("", ""))),
            Block::Bullets(items) => {
                let lines = items.iter().map(|s| format!("• {}", spans(s, now_ms))).collect();
                texts.extend(group(lines, SECTION_TEXT_MAX, ("", "")));
            }
            Block::Code(code) => texts.extend(group(code_lines(code), SECTION_TEXT_MAX, ("```\n", "\n```"))),
        }
    }
    let room = MAX_BLOCKS - usize::from(message.buttons.is_some());
    if texts.len() > room {
        let left_out = texts.len() - (room - 1);
        texts.truncate(room - 1);
        texts.push(format!(
            "… ({left_out} more parts not shown: the message was too long for Slack)"
        ));
    }
    let mut blocks: Vec<Value> = texts.into_iter().map(section).collect();
    if let Some(rid) = &message.buttons {
        blocks.push(json!({
            "type": "actions",
            "block_id": "airlock_answer",
            "elements": [
                {
                    "type": "button",
                    "action_id": "airlock_approve",
                    "style": "primary",
                    "text": { "type": "plain_text", "text": "Approve…" },
                    "value": rid.as_str(),
                },
                {
                    "type": "button",
                    "action_id": "airlock_deny",
                    "style": "danger",
                    "text": { "type": "plain_text", "text": "Deny…" },
                    "value": rid.as_str(),
                },
            ],
        }));
    }
    blocks
}

/// The message's `text`: what notifications show (the mentions and the first two lines).
pub fn fallback(message: &Message, now_ms: i64) -> String {
    let mut text = String::new();
    if message.mention_room {
        text.push_str("<!here> ");
    }
    for m in message.mentions_to_write() {
        text.push_str(&who(m));
        text.push(' ');
    }
    // The first two lines: what it is about, and where it stands.
    let lines: Vec<String> = message
        .blocks
        .iter()
        .take(2)
        .filter_map(|b| match b {
            Block::Heading(s) | Block::Para(s) => Some(spans(s, now_ms)),
            _ => None,
        })
        .collect();
    text.push_str(&lines.join("\n"));
    cut_chars(&text, SECTION_TEXT_MAX)
}
