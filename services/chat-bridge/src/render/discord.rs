//! A message as Discord shows it: Markdown `content` of at most 2,000 characters, and the code
//! in an embed whose description holds at most 4,096 (limits counted after escaping). Airlock's
//! own words have Discord's Markdown characters escaped; data from outside is inline code
//! (deceptive characters made visible, a backtick shown as `ˋ` so that it cannot end the span),
//! which Discord also never reads as a mention; code is a fenced block (`ˋˋˋ` for a run of three
//! backticks). Who is notified is said by `allowed_mentions`, never by the text.

use super::MAX_DATA;
use super::doc::{Block, CodeView, Message, Span};
use super::plain::{code_line, number_width};
use airlock_protocol::text::{clip, visible_line};
use serde_json::{Value, json};

/// Discord's limit on a message's content, in characters.
pub const CONTENT_MAX: usize = 2000;
/// Discord's limit on an embed's description.
pub const EMBED_DESCRIPTION_MAX: usize = 4096;
/// Discord's limit on the characters of all a message's embeds together.
pub const EMBEDS_TOTAL_MAX: usize = 6000;

/// Escapes Discord's Markdown in Airlock's own words.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '*' | '_' | '~' | '`' | '|' | '>' | '#' | '[' | ']' | '<' | '@'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One line of outside text, as inline code.
pub fn data(text: &str) -> String {
    let shown = clip(&visible_line(text), MAX_DATA);
    if shown.is_empty() {
        return "(empty)".into();
    }
    format!("`{}`", shown.replace('`', "ˋ"))
}

/// A Discord user id as a mention Discord shows by name; anything else as data.
pub fn who(identity: &str) -> String {
    if !identity.is_empty() && identity.len() <= 20 && identity.bytes().all(|b| b.is_ascii_digit()) {
        format!("<@{identity}>")
    } else {
        data(identity)
    }
}

pub fn spans(spans: &[Span]) -> String {
    let mut out = String::new();
    for span in spans {
        match span {
            Span::Text(t) => out.push_str(&escape(t)),
            Span::Strong(t) => out.push_str(&format!("**{}**", escape(t))),
            Span::Code(t) => out.push_str(&format!("`{}`", visible_line(t).replace('`', "ˋ"))),
            Span::Data(t) => out.push_str(&data(t)),
            Span::Who(w) => out.push_str(&who(w)),
            // Discord shows these in each reader's time zone, and keeps the relative one current.
            Span::Time { at_ms, relative: rel } => {
                let secs = at_ms.div_euclid(1000);
                out.push_str(&format!("<t:{secs}:f>"));
                if *rel {
                    out.push_str(&format!(" (<t:{secs}:R>)"));
                }
            }
            Span::Link { label, url } => out.push_str(&format!("[{}]({})", escape(label), url.replace(')', "%29"))),
        }
    }
    out
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

fn cut(lines: Vec<String>, max: usize) -> String {
    const MARKER_ROOM: usize = 70;
    let total = lines.len();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let reserve = if i + 1 < total { MARKER_ROOM } else { 0 };
        if chars(&out) + 1 + chars(line) + reserve > max {
            out.push_str(&format!(
                "\n… ({} more lines not shown: too long for Discord)",
                total - i
            ));
            return out.chars().take(max).collect();
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

fn code_embed(code: &CodeView, room: usize) -> Value {
    let width = number_width(code);
    let lines: Vec<String> = code
        .lines
        .iter()
        .map(|l| code_line(l, width).replace("```", "ˋˋˋ"))
        .collect();
    let body = cut(lines, room.min(EMBED_DESCRIPTION_MAX) - 8);
    json!({ "description": format!("```\n{body}\n```") })
}

/// `content` and `embeds` of the message.
/// (Times are Discord's own timestamps, which each reader's client keeps current.)
pub fn render(message: &Message) -> (String, Vec<Value>) {
    let mut lines = Vec::new();
    let mut pings: Vec<String> = message.mentions_to_write().into_iter().map(|m| who(m)).collect();
    if message.mention_room {
        pings.insert(0, "@here".into());
    }
    let mut embeds = Vec::new();
    let mut embed_room = EMBEDS_TOTAL_MAX;
    for (i, block) in message.blocks.iter().enumerate() {
        match block {
            Block::Heading(s) => {
                let mut line = spans(s);
                if i == 0 && !pings.is_empty() {
                    line = format!("{} {line}", pings.join(" "));
                }
                lines.push(line);
            }
            Block::Para(s) => lines.push(spans(s)),
            Block::Bullets(items) => lines.extend(items.iter().map(|s| format!("- {}", spans(s)))),
            Block::Code(code) if embeds.len() < 10 && embed_room > 100 => {
                let embed = code_embed(code, embed_room);
                embed_room = embed_room.saturating_sub(chars(embed["description"].as_str().unwrap_or_default()));
                embeds.push(embed);
            }
            Block::Code(_) => lines.push("… (more code not shown: too long for Discord)".into()),
        }
    }
    (cut(lines, CONTENT_MAX), embeds)
}

/// `allowed_mentions`: exactly the users the message means to notify.
pub fn allowed_mentions(message: &Message) -> Value {
    let users: Vec<&String> = message
        .mentions
        .iter()
        .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    let parse: Vec<&str> = if message.mention_room { vec!["everyone"] } else { vec![] };
    json!({ "parse": parse, "users": users })
}
