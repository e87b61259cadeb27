//! Words and their parts: literals with backslash escapes, the quotes (`'...'`, `"..."`,
//! `$'...'`), backtick substitutions, and the low-level reading of blanks, comments and newlines
//! (where here-document bodies start). What follows a `$` is in `expansion`.

use super::Parser;
use super::ast::{Parts, Range, Word, WordPart};

/// Where a word is read, which decides what ends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WordMode {
    /// A command's word: ends at a blank or an operator.
    Normal,
    /// The word after an operator in `${x:-...}`: ends at the closing brace.
    ParamArg,
    /// An index (`${a[...]}`, `a[...]=`): ends at the closing bracket.
    Subscript,
    /// The right side of `=~` in `[[ ]]`: ends at a blank outside parentheses.
    Regex,
}

pub(super) fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

/// Bytes that are only text in an unquoted word (`PLAIN`) and inside double quotes
/// (`QUOTED_PLAIN`): runs of them are skipped at once.
const PLAIN: [bool; 256] = plain_table(b" \t\r\x0b\x0c\n;&|()<>\\'\"`$");
const QUOTED_PLAIN: [bool; 256] = plain_table(b"\"\\`$");

const fn plain_table(special: &[u8]) -> [bool; 256] {
    let mut table = [true; 256];
    let mut i = 0;
    while i < special.len() {
        table[special[i] as usize] = false;
        i += 1;
    }
    table
}

/// Ends an unquoted word.
pub(super) fn is_meta(c: u8) -> bool {
    is_blank(c) || matches!(c, b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>')
}

pub(super) fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

pub(super) fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Where parts are collected.
trait PartList {
    fn add(&mut self, part: WordPart);
}

impl PartList for Parts {
    fn add(&mut self, part: WordPart) {
        self.push(part);
    }
}

impl PartList for Vec<WordPart> {
    fn add(&mut self, part: WordPart) {
        self.push(part);
    }
}

/// Pushes the literal text `start..end` as a part, if there is any.
fn flush(parts: &mut impl PartList, start: usize, end: usize, make: fn(Range) -> WordPart) {
    if end > start {
        parts.add(make(Range::new(start, end)));
    }
}

impl Parser<'_, '_> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.peek_at(self.pos)
    }

    pub(super) fn peek_at(&self, i: usize) -> Option<u8> {
        if i < self.end { self.bytes.get(i).copied() } else { None }
    }

    pub(super) fn looking_at(&self, text: &[u8]) -> bool {
        self.pos + text.len() <= self.end && self.bytes.get(self.pos..self.pos + text.len()) == Some(text)
    }

    /// Skips the bytes the table calls plain (at least one).
    fn skip_run(&mut self, table: &[bool; 256]) {
        let rest = self.bytes.get(self.pos + 1..self.end).unwrap_or_default();
        self.pos += 1 + rest.iter().position(|&b| !table[b as usize]).unwrap_or(rest.len());
    }

    /// Skips one character, all its bytes.
    pub(super) fn skip_char(&mut self) {
        let Some(c) = self.peek() else { return };
        let len = match c {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        self.pos = (self.pos + len).min(self.end);
        while self.pos < self.end && !self.source.is_char_boundary(self.pos) {
            self.pos += 1;
        }
    }

    /// Skips blanks and line continuations.
    pub(super) fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(c) if is_blank(c) => self.pos += 1,
                Some(b'\\') if self.peek_at(self.pos + 1) == Some(b'\n') => self.pos += 2,
                Some(b'\\')
                    if self.peek_at(self.pos + 1) == Some(b'\r') && self.peek_at(self.pos + 2) == Some(b'\n') =>
                {
                    self.pos += 3
                }
                _ => break,
            }
        }
    }

    /// Skips blanks and a comment (up to its newline, which is left).
    pub(super) fn skip_blanks_and_comment(&mut self) {
        self.skip_blanks();
        if self.peek() == Some(b'#') {
            self.skip_line();
        }
    }

    /// Skips to the next newline (not consumed).
    pub(super) fn skip_line(&mut self) {
        let rest = self.bytes.get(self.pos..self.end).unwrap_or_default();
        self.pos += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    }

    /// Skips blanks, comments and newlines (here-document bodies are read at each newline).
    pub(super) fn skip_space(&mut self) {
        loop {
            self.skip_blanks_and_comment();
            if self.peek() == Some(b'\n') {
                self.newline();
            } else {
                break;
            }
        }
    }

    /// Consumes a newline. Here-documents begun on the line it ends take their bodies from here.
    pub(super) fn newline(&mut self) {
        self.pos += 1;
        if !self.pending.is_empty() {
            self.read_heredocs();
        }
    }

    /// A word, or `None` if none starts here.
    pub(super) fn word(&mut self, mode: WordMode) -> Option<Word> {
        let start = self.pos;
        let mut parts = Parts::default();
        let mut literal = self.pos;
        let mut depth = 0u32;
        while let Some(c) = self.peek() {
            if self.stop {
                break;
            }
            match c {
                b'\\' => self.pos = (self.pos + 2).min(self.end),
                b'\'' => {
                    flush(&mut parts, literal, self.pos, WordPart::Literal);
                    parts.push(self.single_quoted());
                    literal = self.pos;
                }
                b'"' => {
                    flush(&mut parts, literal, self.pos, WordPart::Literal);
                    let at = self.pos;
                    parts.push(self.double_quoted(at));
                    literal = self.pos;
                }
                b'`' => {
                    flush(&mut parts, literal, self.pos, WordPart::Literal);
                    parts.push(self.backtick());
                    literal = self.pos;
                }
                b'$' => {
                    let at = self.pos;
                    match self.dollar() {
                        Some(part) => {
                            flush(&mut parts, literal, at, WordPart::Literal);
                            parts.push(part);
                            literal = self.pos;
                        }
                        None => self.pos += 1,
                    }
                }
                _ => match mode {
                    WordMode::Normal if PLAIN[c as usize] => self.skip_run(&PLAIN),
                    WordMode::Normal => {
                        if c == b'('
                            && self.pos > start
                            && matches!(self.bytes.get(self.pos - 1), Some(b'?' | b'*' | b'+' | b'@' | b'!'))
                        {
                            // An extended glob: `@(a|b)`, `!(*.txt)`.
                            self.skip_glob_group();
                        } else if (c == b'<' || c == b'>') && self.peek_at(self.pos + 1) == Some(b'(') {
                            flush(&mut parts, literal, self.pos, WordPart::Literal);
                            parts.push(self.process_sub());
                            literal = self.pos;
                        } else if is_meta(c) {
                            break;
                        } else {
                            self.pos += 1;
                        }
                    }
                    WordMode::ParamArg => {
                        if c == b'}' {
                            break;
                        }
                        self.pos += 1;
                    }
                    WordMode::Subscript => {
                        match c {
                            b'[' => depth += 1,
                            b']' if depth == 0 => break,
                            b']' => depth -= 1,
                            _ => {}
                        }
                        self.pos += 1;
                    }
                    WordMode::Regex => {
                        match c {
                            b'(' => depth += 1,
                            b')' if depth == 0 => break,
                            b')' => depth -= 1,
                            b'\n' => break,
                            _ if depth == 0 && (is_blank(c) || matches!(c, b';' | b'&' | b'<' | b'>')) => break,
                            _ => {}
                        }
                        self.pos += 1;
                    }
                },
            }
        }
        flush(&mut parts, literal, self.pos, WordPart::Literal);
        (self.pos > start).then(|| Word {
            range: Range::new(start, self.pos),
            parts,
        })
    }

    /// `@(a|b)`: the parenthesised group of an extended glob, as literal text.
    fn skip_glob_group(&mut self) {
        let mut depth = 0u32;
        while let Some(c) = self.peek() {
            match c {
                b'(' => depth += 1,
                b')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.pos += 1;
                        return;
                    }
                }
                b'\\' => self.pos += 1,
                b'\n' => break,
                _ => {}
            }
            self.pos = (self.pos + 1).min(self.end);
        }
        let at = self.pos;
        self.error(at, "unterminated extended glob");
    }

    /// `'...'` (at the opening quote).
    pub(super) fn single_quoted(&mut self) -> WordPart {
        let start = self.pos + 1;
        let rest = self.bytes.get(start..self.end).unwrap_or_default();
        match rest.iter().position(|&b| b == b'\'') {
            Some(n) => {
                self.pos = start + n + 1;
                WordPart::SingleQuoted(Range::new(start, start + n))
            }
            None => {
                self.error(start - 1, "unterminated single quote");
                self.pos = self.end;
                WordPart::SingleQuoted(Range::new(start, self.end))
            }
        }
    }

    /// `$'...'` (at the `$`).
    pub(super) fn ansi_c(&mut self) -> WordPart {
        let open = self.pos;
        self.pos += 2;
        let start = self.pos;
        while let Some(c) = self.peek() {
            match c {
                b'\\' => self.pos = (self.pos + 2).min(self.end),
                b'\'' => {
                    self.pos += 1;
                    return WordPart::AnsiC(Range::new(start, self.pos - 1));
                }
                _ => self.pos += 1,
            }
        }
        self.error(open, "unterminated $'...' string");
        WordPart::AnsiC(Range::new(start, self.pos))
    }

    /// `"..."`; `open` is where the part starts (the `$` of `$"..."`), the position is at `"`.
    pub(super) fn double_quoted(&mut self, open: usize) -> WordPart {
        self.pos += 1;
        let mut parts = Vec::new();
        let mut literal = self.pos;
        loop {
            if self.stop {
                break;
            }
            match self.peek() {
                None => {
                    self.error(open, "unterminated double quote");
                    break;
                }
                Some(b'"') => {
                    flush(&mut parts, literal, self.pos, WordPart::QuotedLiteral);
                    self.pos += 1;
                    return WordPart::DoubleQuoted(Range::new(open, self.pos), parts);
                }
                Some(b'\\') => self.pos = (self.pos + 2).min(self.end),
                Some(b'$') => {
                    let at = self.pos;
                    match self.quoted_dollar() {
                        Some(part) => {
                            flush(&mut parts, literal, at, WordPart::QuotedLiteral);
                            parts.push(part);
                            literal = self.pos;
                        }
                        None => self.pos += 1,
                    }
                }
                Some(b'`') => {
                    flush(&mut parts, literal, self.pos, WordPart::QuotedLiteral);
                    parts.push(self.backtick());
                    literal = self.pos;
                }
                Some(_) => self.skip_run(&QUOTED_PLAIN),
            }
        }
        flush(&mut parts, literal, self.pos, WordPart::QuotedLiteral);
        WordPart::DoubleQuoted(Range::new(open, self.pos), parts)
    }

    /// `` `...` `` (at the opening backtick): the text up to the closing one, parsed as a script.
    pub(super) fn backtick(&mut self) -> WordPart {
        let open = self.pos;
        let mut i = open + 1;
        let mut close = None;
        while i < self.end {
            match self.bytes.get(i) {
                Some(b'\\') => i += 2,
                Some(b'`') => {
                    close = Some(i);
                    break;
                }
                _ => i += 1,
            }
        }
        let inner_end = close.unwrap_or(self.end);
        if close.is_none() {
            self.error(open, "unterminated backtick substitution");
        }
        let body = self
            .nested(|p| p.bounded(open + 1, inner_end, |p| p.fresh_context(None, |p| p.list())))
            .unwrap_or_default();
        if !self.stop {
            self.pos = close.map_or(self.end, |c| c + 1);
        }
        WordPart::CommandSub(Range::new(open, self.pos.max(open + 1)), body)
    }

    /// Runs `inner` over `start..end` only, then restores the limit (the position is the
    /// caller's to set).
    pub(super) fn bounded<R>(&mut self, start: usize, end: usize, inner: impl FnOnce(&mut Self) -> R) -> R {
        let saved = self.end;
        self.pos = start;
        self.end = end.min(saved);
        let result = inner(self);
        self.end = saved;
        result
    }
}
