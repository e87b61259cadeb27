//! A message as plain text: the Matrix `body` (what notifications and text-only clients show)
//! and the webhook's `text`. Data from outside is shown between double quotes, with every
//! deceptive character made visible and `"` and `\` escaped, so that nothing inside the quotes
//! can end them; code is shown one numbered line at a time.

use super::doc::{Block, CodeLine, CodeView, Message, Span};
use super::{MAX_DATA, relative, time_of};
use airlock_protocol::text::{clip, visible_block, visible_line};

/// One line of outside text, quoted: `"…"`, with `"` and `\` escaped.
pub fn data(text: &str) -> String {
    let shown = clip(&visible_line(text), MAX_DATA);
    let mut out = String::with_capacity(shown.len() + 2);
    out.push('"');
    for c in shown.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn spans(spans: &[Span], now_ms: i64) -> String {
    let mut out = String::new();
    for span in spans {
        match span {
            Span::Text(t) | Span::Strong(t) => out.push_str(t),
            Span::Code(t) => {
                out.push('`');
                out.push_str(&visible_line(t).replace('`', "'"));
                out.push('`');
            }
            Span::Data(t) => out.push_str(&data(t)),
            Span::Who(w) => out.push_str(&visible_line(w)),
            Span::Time { at_ms, relative: rel } => {
                out.push_str(&time_of(*at_ms));
                if *rel {
                    out.push_str(&format!(" ({})", relative(*at_ms, now_ms)));
                }
            }
            Span::Link { label, url } => out.push_str(&format!("{label}: {url}")),
        }
    }
    out
}

/// One numbered line: `  12 | code`, `▶ 12 | code` when a finding points at it.
pub fn code_line(line: &CodeLine, width: usize) -> String {
    match line {
        CodeLine::Line { number, text, flagged } => {
            let mark = if *flagged { "▶" } else { " " };
            format!("{mark}{number:>width$} | {}", visible_block(text).replace('\n', " "))
        }
        CodeLine::Skipped { from, to: Some(to) } if from == to => format!(" {:>width$} | … line {from} not shown", ""),
        CodeLine::Skipped { from, to: Some(to) } => format!(" {:>width$} | … lines {from}–{to} not shown", ""),
        CodeLine::Skipped { from, to: None } => format!(" {:>width$} | … lines from {from} on not shown", ""),
        CodeLine::Unnumbered(text) => visible_block(text).replace('\n', " "),
    }
}

/// The width of the widest line number.
pub fn number_width(code: &CodeView) -> usize {
    code.lines
        .iter()
        .map(|l| match l {
            CodeLine::Line { number, .. } | CodeLine::Skipped { from: number, .. } => number.to_string().len(),
            CodeLine::Unnumbered(_) => 0,
        })
        .max()
        .unwrap_or(1)
}

/// The whole message, at most `max_bytes`: what does not fit is left out with a line saying so.
pub fn render(message: &Message, now_ms: i64, max_bytes: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for block in &message.blocks {
        match block {
            Block::Heading(s) | Block::Para(s) => lines.push(spans(s, now_ms)),
            Block::Bullets(items) => lines.extend(items.iter().map(|s| format!("- {}", spans(s, now_ms)))),
            Block::Code(code) => {
                let width = number_width(code);
                lines.extend(code.lines.iter().map(|l| code_line(l, width)));
            }
        }
    }
    fit(lines, max_bytes)
}

/// Joins lines, leaving out those past `max_bytes` with a marker that counts them.
pub fn fit(lines: Vec<String>, max_bytes: usize) -> String {
    /// Room kept for the marker while more lines follow.
    const MARKER_ROOM: usize = 80;
    let total = lines.len();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let separator = usize::from(!out.is_empty());
        let reserve = if i + 1 < total { MARKER_ROOM } else { 0 };
        if out.len() + separator + line.len() + reserve > max_bytes {
            let marker = format!("… ({} more lines not shown: the message was too long)", total - i);
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&marker);
            return clip(&out, max_bytes);
        }
        if separator == 1 {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}
