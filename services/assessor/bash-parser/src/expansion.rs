//! What follows a `$`: parameter expansions (`$x`, `${x:-default}`, `${#x}`, `${a[@]}`), command
//! substitutions `$(...)`, arithmetic `$((...))` and `$[...]`, `$'...'` and `$"..."`; and process
//! substitutions `<(...)` and `>(...)`.

use super::ast::{Param, ParamOp, Range, WordPart};
use super::lexer::{WordMode, is_name_char, is_name_start};
use super::{Closer, Parser};

/// How `$((`, `((` and `$[` arithmetic ends.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ArithEnd {
    Parens,
    Bracket,
}

impl Parser<'_, '_> {
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
