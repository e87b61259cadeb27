//! Words and their parts: literals with backslash escapes, the quotes (`'...'`, `"..."`,
//! `$'...'`, `$"..."`), parameter expansions, command, process and arithmetic substitutions,
//! and here-document bodies.

use super::ast::{Param, ParamOp, Parts, Range, Word, WordPart};
use super::{Closer, Parser};

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

/// How `$((`, `((` and `$[` arithmetic ends.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ArithEnd {
    Parens,
    Bracket,
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
    fn ansi_c(&mut self) -> WordPart {
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

    /// What follows a `$`: `None` (and nothing consumed) when it expands nothing.
    pub(super) fn dollar(&mut self) -> Option<WordPart> {
        let at = self.pos;
        let next = self.peek_at(at + 1)?;
        match next {
            b'{' => Some(self.braced_param()),
            b'(' => {
                if self.peek_at(at + 2) == Some(b'(') && self.is_arithmetic(at + 1) {
                    self.pos = at + 3;
                    Some(self.arith(at, ArithEnd::Parens))
                } else {
                    Some(self.command_sub())
                }
            }
            b'[' => {
                self.pos = at + 2;
                Some(self.arith(at, ArithEnd::Bracket))
            }
            b'\'' => Some(self.ansi_c()),
            b'"' => {
                self.pos = at + 1;
                Some(self.double_quoted(at))
            }
            c if is_name_start(c) => {
                let rest = self.bytes.get(at + 1..self.end).unwrap_or_default();
                let len = rest.iter().position(|&b| !is_name_char(b)).unwrap_or(rest.len());
                self.pos = at + 1 + len;
                Some(simple_param(at, at + 1, self.pos))
            }
            c if c.is_ascii_digit() || matches!(c, b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') => {
                self.pos = at + 2;
                Some(simple_param(at, at + 1, self.pos))
            }
            _ => None,
        }
    }

    /// What follows a `$` inside double quotes or a here-document, where `$'` and `$"` are
    /// not quotes.
    pub(super) fn quoted_dollar(&mut self) -> Option<WordPart> {
        match self.peek_at(self.pos + 1) {
            Some(b'\'' | b'"') => None,
            _ => self.dollar(),
        }
    }

    /// `$(...)` (at the `$`).
    fn command_sub(&mut self) -> WordPart {
        let open = self.pos;
        self.pos += 2;
        let body = self
            .nested(|p| p.fresh_context(Some(Closer::Paren), |p| p.list()))
            .unwrap_or_default();
        self.close_paren(open, "unterminated $( substitution");
        WordPart::CommandSub(Range::new(open, self.pos), body)
    }

    /// `<(...)` or `>(...)` (at the `<` or `>`).
    pub(super) fn process_sub(&mut self) -> WordPart {
        let open = self.pos;
        self.pos += 2;
        let body = self
            .nested(|p| p.fresh_context(Some(Closer::Paren), |p| p.list()))
            .unwrap_or_default();
        self.close_paren(open, "unterminated process substitution");
        WordPart::ProcessSub(Range::new(open, self.pos), body)
    }

    pub(super) fn close_paren(&mut self, open: usize, message: &'static str) {
        if self.stop {
            return;
        }
        if self.peek() == Some(b')') {
            self.pos += 1;
        } else {
            self.error(open, message);
        }
    }

    /// Whether the `((` at `open` is arithmetic (its inner parenthesis closes right before the
    /// outer one) rather than a subshell inside a subshell or substitution.
    pub(super) fn is_arithmetic(&mut self, open: usize) -> bool {
        let mut depth = 0i32;
        let mut i = open;
        let mut steps = 0u32;
        while let Some(&c) = self.bytes.get(i).filter(|_| i < self.end) {
            match c {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 1 {
                        return self.peek_at(i + 1) == Some(b')');
                    }
                    if depth <= 0 {
                        return false;
                    }
                }
                b'\\' => i += 1,
                b'\'' | b'"' | b'`' => {
                    let rest = self.bytes.get(i + 1..self.end).unwrap_or_default();
                    match rest.iter().position(|&b| b == c) {
                        Some(n) => i += n + 1,
                        None => return false,
                    }
                }
                _ => {}
            }
            i += 1;
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(4096) && !self.tick() {
                return false;
            }
        }
        false
    }

    /// The inside of `$((...))`, `((...))` or `$[...]` (the position is past the opening),
    /// keeping the expansions and substitutions in it; `start` is where the part starts.
    pub(super) fn arith(&mut self, start: usize, end: ArithEnd) -> WordPart {
        let parts = self.nested(|p| p.arith_body(start, end)).unwrap_or_default();
        WordPart::Arith(Range::new(start, self.pos), parts)
    }

    fn arith_body(&mut self, start: usize, end: ArithEnd) -> Vec<WordPart> {
        let mut parts = Vec::new();
        let mut depth = 0u32;
        loop {
            if self.stop {
                break;
            }
            let Some(c) = self.peek() else {
                self.error(start, "unterminated arithmetic");
                break;
            };
            match c {
                b'(' => {
                    depth += 1;
                    self.pos += 1;
                }
                b')' if depth > 0 => {
                    depth -= 1;
                    self.pos += 1;
                }
                b')' if end == ArithEnd::Parens => {
                    if self.peek_at(self.pos + 1) == Some(b')') {
                        self.pos += 2;
                    } else {
                        let at = self.pos;
                        self.error(at, "arithmetic closed by a single parenthesis");
                        self.pos += 1;
                    }
                    break;
                }
                b']' if end == ArithEnd::Bracket && depth == 0 => {
                    self.pos += 1;
                    break;
                }
                b'$' => match self.dollar() {
                    Some(part) => parts.push(part),
                    None => self.pos += 1,
                },
                b'`' => parts.push(self.backtick()),
                b'"' => {
                    let at = self.pos;
                    parts.push(self.double_quoted(at));
                }
                b'\\' => self.pos = (self.pos + 2).min(self.end),
                _ => self.pos += 1,
            }
        }
        parts
    }

    /// `${...}` (at the `$`).
    fn braced_param(&mut self) -> WordPart {
        let open = self.pos;
        self.pos += 2;
        match self.nested(|p| p.param_body(open)) {
            Some(param) => WordPart::Param(Box::new(param)),
            None => WordPart::Param(Box::new(Param {
                range: Range::new(open, self.pos),
                name: Range::new(self.pos, self.pos),
                braced: true,
                length: false,
                indirect: false,
                subscript: None,
                op: None,
                arg: None,
            })),
        }
    }

    fn param_body(&mut self, open: usize) -> Param {
        let mut length = false;
        let mut indirect = false;
        let starts_name = |c: Option<u8>| {
            c.is_some_and(|c| is_name_char(c) || matches!(c, b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-'))
        };
        match self.peek() {
            Some(b'#') if self.peek_at(self.pos + 1) != Some(b'}') && starts_name(self.peek_at(self.pos + 1)) => {
                length = true;
                self.pos += 1;
            }
            Some(b'!') if self.peek_at(self.pos + 1) != Some(b'}') && starts_name(self.peek_at(self.pos + 1)) => {
                indirect = true;
                self.pos += 1;
            }
            _ => {}
        }
        let name_start = self.pos;
        match self.peek() {
            Some(c) if is_name_start(c) => {
                while self.peek().is_some_and(is_name_char) {
                    self.pos += 1;
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
            Some(b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') => self.pos += 1,
            _ => {}
        }
        let name = Range::new(name_start, self.pos);
        let mut subscript = None;
        if self.peek() == Some(b'[') {
            self.pos += 1;
            subscript = self.word(WordMode::Subscript);
            if self.peek() == Some(b']') {
                self.pos += 1;
            } else {
                let at = self.pos;
                self.error(at, "unterminated subscript");
            }
        }
        let two = (self.peek(), self.peek_at(self.pos + 1));
        let (op, len) = match two {
            (Some(b':'), Some(b'-')) => (Some(ParamOp::Default), 2),
            (Some(b':'), Some(b'=')) => (Some(ParamOp::Assign), 2),
            (Some(b':'), Some(b'+')) => (Some(ParamOp::Alternative), 2),
            (Some(b':'), Some(b'?')) => (Some(ParamOp::Error), 2),
            (Some(b':'), _) => (Some(ParamOp::Substring), 1),
            (Some(b'-'), _) => (Some(ParamOp::Default), 1),
            (Some(b'='), _) => (Some(ParamOp::Assign), 1),
            (Some(b'+'), _) => (Some(ParamOp::Alternative), 1),
            (Some(b'?'), _) => (Some(ParamOp::Error), 1),
            (Some(b'#'), Some(b'#')) | (Some(b'%'), Some(b'%')) => (Some(ParamOp::Trim), 2),
            (Some(b'#' | b'%'), _) => (Some(ParamOp::Trim), 1),
            (Some(b'/'), Some(b'/' | b'#' | b'%')) => (Some(ParamOp::Replace), 2),
            (Some(b'/'), _) => (Some(ParamOp::Replace), 1),
            (Some(b'^'), Some(b'^')) | (Some(b','), Some(b',')) => (Some(ParamOp::Case), 2),
            (Some(b'^' | b','), _) => (Some(ParamOp::Case), 1),
            (Some(b'@'), _) => (Some(ParamOp::Transform), 1),
            _ => (None, 0),
        };
        self.pos += len;
        if op.is_none() && !matches!(self.peek(), Some(b'}') | None) {
            let at = self.pos;
            self.error(at, "bad substitution");
        }
        let arg = if self.peek() == Some(b'}') {
            None
        } else {
            self.word(WordMode::ParamArg)
        };
        if !self.stop {
            if self.peek() == Some(b'}') {
                self.pos += 1;
            } else {
                self.error(open, "unterminated ${ expansion");
            }
        }
        Param {
            range: Range::new(open, self.pos),
            name,
            braced: true,
            length,
            indirect,
            subscript,
            op,
            arg,
        }
    }
}

fn simple_param(start: usize, name_start: usize, end: usize) -> WordPart {
    WordPart::Param(Box::new(Param {
        range: Range::new(start, end),
        name: Range::new(name_start, end),
        braced: false,
        length: false,
        indirect: false,
        subscript: None,
        op: None,
        arg: None,
    }))
}
