//! Redirections (`> f`, `2>&1`, `{fd}> f`, `<<< word`) and here-documents, whose bodies are read
//! at the newline that ends the line they start on.

use super::ast::{Heredoc, Range, Redirect, RedirectOp, RedirectTarget, WordPart};
use super::lexer::{WordMode, is_name_char, is_name_start};
use super::{Parser, Pending};

impl Parser<'_, '_> {
    /// A redirection, if one starts here (nothing consumed otherwise).
    pub(super) fn redirect(&mut self) -> Option<Redirect> {
        let start = self.pos;
        let mut i = start;
        let mut fd = None;
        match self.peek()? {
            c if c.is_ascii_digit() => {
                while self.peek_at(i).is_some_and(|c| c.is_ascii_digit()) {
                    i += 1;
                }
                if !matches!(self.peek_at(i), Some(b'<' | b'>')) {
                    return None;
                }
                fd = Some(Range::new(start, i));
            }
            b'{' => {
                let mut j = i + 1;
                if !self.peek_at(j).is_some_and(is_name_start) {
                    return None;
                }
                while self.peek_at(j).is_some_and(is_name_char) {
                    j += 1;
                }
                if self.peek_at(j) != Some(b'}') || !matches!(self.peek_at(j + 1), Some(b'<' | b'>')) {
                    return None;
                }
                fd = Some(Range::new(i + 1, j));
                i = j + 1;
            }
            b'<' | b'>' | b'&' => {}
            _ => return None,
        }
        let (op, len) = match (self.peek_at(i), self.peek_at(i + 1), self.peek_at(i + 2)) {
            (Some(b'<'), Some(b'<'), Some(b'<')) => (RedirectOp::HereString, 3),
            (Some(b'<'), Some(b'<'), Some(b'-')) => (RedirectOp::Heredoc, 3),
            (Some(b'<'), Some(b'<'), _) => (RedirectOp::Heredoc, 2),
            (Some(b'<'), Some(b'>'), _) => (RedirectOp::ReadWrite, 2),
            (Some(b'<'), Some(b'&'), _) => (RedirectOp::DupRead, 2),
            (Some(b'<' | b'>'), Some(b'('), _) => return None,
            (Some(b'<'), _, _) => (RedirectOp::Read, 1),
            (Some(b'>'), Some(b'>'), _) => (RedirectOp::Append, 2),
            (Some(b'>'), Some(b'|'), _) => (RedirectOp::Clobber, 2),
            (Some(b'>'), Some(b'&'), _) => (RedirectOp::DupWrite, 2),
            (Some(b'>'), _, _) => (RedirectOp::Write, 1),
            (Some(b'&'), Some(b'>'), Some(b'>')) if fd.is_none() => (RedirectOp::AppendAll, 3),
            (Some(b'&'), Some(b'>'), _) if fd.is_none() => (RedirectOp::WriteAll, 2),
            _ => return None,
        };
        let strip_tabs = op == RedirectOp::Heredoc && len == 3;
        self.pos = i + len;
        self.skip_blanks();
        let target = match self.word(WordMode::Normal) {
            None => {
                self.error(start, "redirection without a target");
                RedirectTarget::Missing
            }
            Some(word) if op == RedirectOp::Heredoc => {
                let (delimiter, quoted) = heredoc_delimiter(word.range.text(self.source));
                let index = self.heredocs.len() as u32;
                self.heredocs.push(Heredoc {
                    quoted,
                    strip_tabs,
                    ..Heredoc::default()
                });
                self.pending.push(Pending {
                    index,
                    at: start,
                    delimiter,
                    strip_tabs,
                    quoted,
                });
                RedirectTarget::Heredoc(index)
            }
            Some(word) => RedirectTarget::Word(word),
        };
        Some(Redirect {
            range: Range::new(start, self.pos),
            fd,
            op,
            target,
        })
    }

    /// Reads the bodies of the here-documents begun on the line that just ended (the position
    /// is at the start of the next line).
    pub(super) fn read_heredocs(&mut self) {
        for pending in std::mem::take(&mut self.pending) {
            let body_start = self.pos;
            let mut line_start = self.pos;
            let (body_end, next) = loop {
                if line_start >= self.end {
                    self.error(pending.at, "here-document without its end");
                    break (self.end, self.end);
                }
                let rest = self.bytes.get(line_start..self.end).unwrap_or_default();
                let line_end = line_start + rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                let mut line = self.bytes.get(line_start..line_end).unwrap_or_default();
                if pending.strip_tabs {
                    while let [b'\t', tail @ ..] = line {
                        line = tail;
                    }
                }
                if let [head @ .., b'\r'] = line {
                    line = head;
                }
                if line == pending.delimiter.as_bytes() {
                    break (line_start, (line_end + 1).min(self.end));
                }
                line_start = line_end + 1;
            };
            let parts = self.heredoc_parts(body_start, body_end, pending.quoted, pending.strip_tabs);
            if let Some(heredoc) = self.heredocs.get_mut(pending.index as usize) {
                heredoc.range = Range::new(body_start, body_end);
                heredoc.parts = parts;
            }
            self.pos = next;
        }
    }

    /// A here-document's text as parts: literal text (leading tabs left out for `<<-`), and
    /// unless the delimiter was quoted, expansions and substitutions.
    fn heredoc_parts(&mut self, start: usize, end: usize, quoted: bool, strip_tabs: bool) -> Vec<WordPart> {
        let saved = self.pos;
        let parts = self.bounded(start, end, |p| {
            let mut parts = Vec::new();
            let mut literal = p.pos;
            let literal_part = |parts: &mut Vec<WordPart>, from: usize, to: usize| {
                if to > from {
                    parts.push(WordPart::RawLiteral(Range::new(from, to)));
                }
            };
            if strip_tabs {
                while p.peek() == Some(b'\t') {
                    p.pos += 1;
                }
                literal = p.pos;
            }
            while let Some(c) = p.peek() {
                if p.stop {
                    break;
                }
                match c {
                    b'\n' => {
                        p.pos += 1;
                        if strip_tabs {
                            literal_part(&mut parts, literal, p.pos);
                            while p.peek() == Some(b'\t') {
                                p.pos += 1;
                            }
                            literal = p.pos;
                        }
                    }
                    b'\\' if !quoted => p.pos = (p.pos + 2).min(p.end),
                    b'$' if !quoted => {
                        let at = p.pos;
                        match p.quoted_dollar() {
                            Some(part) => {
                                literal_part(&mut parts, literal, at);
                                parts.push(part);
                                literal = p.pos;
                            }
                            None => p.pos += 1,
                        }
                    }
                    b'`' if !quoted => {
                        literal_part(&mut parts, literal, p.pos);
                        parts.push(p.backtick());
                        literal = p.pos;
                    }
                    _ => p.pos += 1,
                }
            }
            literal_part(&mut parts, literal, p.pos);
            parts
        });
        self.pos = saved;
        parts
    }
}

/// A here-document's delimiter as the shell compares it (quotes removed), and whether it was
/// quoted (then the body is taken as it is).
fn heredoc_delimiter(word: &str) -> (String, bool) {
    let mut delimiter = String::with_capacity(word.len());
    let mut quoted = false;
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => quoted = true,
            '\\' => {
                quoted = true;
                if let Some(next) = chars.next() {
                    delimiter.push(next);
                }
            }
            '$' if chars.as_str().starts_with(['\'', '"']) => {}
            _ => delimiter.push(c),
        }
    }
    (delimiter, quoted)
}
