//! A message as HTML, the Matrix `formatted_body` (`org.matrix.custom.html`), with only the tags
//! Matrix clients keep. Data from outside is shown in `<code>` with deceptive characters made
//! visible and every HTML-significant character escaped; code is a numbered `<pre>` block.

use super::doc::{Block, Message, Span};
use super::plain::{code_line, number_width};
use super::{MAX_DATA, relative, time_of};
use airlock_protocol::text::{clip, visible_line};

/// HTML-escapes text (element content and attribute values alike).
pub fn escape(text: &str) -> String {
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

/// One line of outside text, as data.
pub fn data(text: &str) -> String {
    format!("<code>{}</code>", escape(&clip(&visible_line(text), MAX_DATA)))
}

/// A pill for a Matrix user (a link clients show as the user's name).
pub fn pill(identity: &str) -> String {
    let shown = escape(&visible_line(identity));
    if identity.starts_with('@') && !identity.contains(char::is_whitespace) {
        format!("<a href=\"https://matrix.to/#/{shown}\">{shown}</a>")
    } else {
        shown
    }
}

fn spans(spans: &[Span], now_ms: i64) -> String {
    let mut out = String::new();
    for span in spans {
        match span {
            Span::Text(t) => out.push_str(&escape(t)),
            Span::Strong(t) => out.push_str(&format!("<strong>{}</strong>", escape(t))),
            Span::Code(t) => out.push_str(&format!("<code>{}</code>", escape(&visible_line(t)))),
            Span::Data(t) => out.push_str(&data(t)),
            Span::Who(w) => out.push_str(&pill(w)),
            Span::Time { at_ms, relative: rel } => {
                out.push_str(&escape(&time_of(*at_ms)));
                if *rel {
                    out.push_str(&format!(" ({})", escape(&relative(*at_ms, now_ms))));
                }
            }
            Span::Link { label, url } => {
                out.push_str(&format!("<a href=\"{}\">{}</a>", escape(url), escape(label)));
            }
        }
    }
    out
}

/// The whole message, at most `max_bytes`: blocks that do not fit are left out with a line
/// saying so, and a code block is cut between lines.
pub fn render(message: &Message, now_ms: i64, max_bytes: usize) -> String {
    const MARKER_ROOM: usize = 120;
    let mut out = String::new();
    let total = message.blocks.len();
    for (i, block) in message.blocks.iter().enumerate() {
        let part = match block {
            Block::Heading(s) => format!("<p>{}</p>\n", spans(s, now_ms)),
            Block::Para(s) => format!("<p>{}</p>\n", spans(s, now_ms)),
            Block::Bullets(items) => {
                let list: String = items.iter().map(|s| format!("<li>{}</li>", spans(s, now_ms))).collect();
                format!("<ul>{list}</ul>\n")
            }
            Block::Code(code) => {
                let width = number_width(code);
                let room = max_bytes.saturating_sub(out.len() + MARKER_ROOM + 30);
                let mut body = String::new();
                let mut left_out = 0;
                for line in &code.lines {
                    let shown = escape(&code_line(line, width)) + "\n";
                    if left_out > 0 || body.len() + shown.len() > room {
                        left_out += 1;
                        continue;
                    }
                    body.push_str(&shown);
                }
                if left_out > 0 {
                    body.push_str(&format!(
                        "… ({left_out} more lines not shown: the message was too long)\n"
                    ));
                }
                format!("<pre><code>{body}</code></pre>\n")
            }
        };
        let reserve = if i + 1 < total { MARKER_ROOM } else { 0 };
        if out.len() + part.len() + reserve > max_bytes {
            out.push_str(&format!(
                "<p>… ({} more parts not shown: the message was too long)</p>",
                total - i
            ));
            return out;
        }
        out.push_str(&part);
    }
    out
}
