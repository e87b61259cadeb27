//! Statements: lists, and-or lists, pipelines, simple commands and declarations, assignments.

use super::ast::{
    AndOr, AndOrOp, AssignValue, Assignment, Declaration, DeclarationArg, Pipeline, Range, Redirect, Simple, Stmt,
    StmtKind, Word, WordPart,
};
use super::lexer::{WordMode, is_meta, is_name_char, is_name_start};
use super::{Closer, Parser};

/// Reserved words, recognised where a command starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reserved {
    If,
    Then,
    Elif,
    Else,
    Fi,
    While,
    Until,
    For,
    Select,
    Do,
    Done,
    Case,
    Esac,
    Function,
    Coproc,
    Time,
    LeftBrace,
    RightBrace,
    Bang,
    DoubleBracket,
}

impl Reserved {
    pub(super) fn closer(self) -> Option<Closer> {
        Some(match self {
            Reserved::Then => Closer::Then,
            Reserved::Elif => Closer::Elif,
            Reserved::Else => Closer::Else,
            Reserved::Fi => Closer::Fi,
            Reserved::Do => Closer::Do,
            Reserved::Done => Closer::Done,
            Reserved::Esac => Closer::Esac,
            Reserved::RightBrace => Closer::Brace,
            _ => return None,
        })
    }

    /// Starts a compound command.
    pub(super) fn starts_compound(self) -> bool {
        matches!(
            self,
            Reserved::If
                | Reserved::While
                | Reserved::Until
                | Reserved::For
                | Reserved::Select
                | Reserved::Case
                | Reserved::LeftBrace
                | Reserved::DoubleBracket
                | Reserved::Function
                | Reserved::Coproc
        )
    }
}

/// Commands whose arguments may be assignments (`export A=b`, `local -a xs=(1 2)`).
const DECLARATIONS: [&str; 7] = ["export", "local", "declare", "typeset", "readonly", "unset", "unsetenv"];

/// What comes next among a simple command's words (see [`Parser::command_item`]).
enum Item {
    End,
    Redirect,
    Skipped,
    Word,
}

impl Parser<'_, '_> {
    /// The reserved word at the position, if there is one, and its length.
    pub(super) fn reserved(&self) -> Option<(Reserved, usize)> {
        let rest = self.bytes.get(self.pos..self.end)?;
        if !matches!(
            rest.first(),
            Some(b'i' | b't' | b'e' | b'f' | b'w' | b'u' | b's' | b'd' | b'c' | b'{' | b'}' | b'!' | b'[')
        ) {
            return None;
        }
        let len = rest
            .iter()
            .take(9)
            .position(|&b| is_meta(b))
            .unwrap_or(rest.len().min(9));
        let word = match rest.get(..len)? {
            b"if" => Reserved::If,
            b"then" => Reserved::Then,
            b"elif" => Reserved::Elif,
            b"else" => Reserved::Else,
            b"fi" => Reserved::Fi,
            b"while" => Reserved::While,
            b"until" => Reserved::Until,
            b"for" => Reserved::For,
            b"select" => Reserved::Select,
            b"do" => Reserved::Do,
            b"done" => Reserved::Done,
            b"case" => Reserved::Case,
            b"esac" => Reserved::Esac,
            b"function" => Reserved::Function,
            b"coproc" => Reserved::Coproc,
            b"time" => Reserved::Time,
            b"{" => Reserved::LeftBrace,
            b"}" => Reserved::RightBrace,
            b"!" => Reserved::Bang,
            b"[[" => Reserved::DoubleBracket,
            _ => return None,
        };
        Some((word, len))
    }

    /// Consumes the reserved word `expected` if it is next.
    pub(super) fn take_reserved(&mut self, expected: Reserved) -> bool {
        self.skip_blanks();
        match self.reserved() {
            Some((word, len)) if word == expected => {
                self.pos += len;
                true
            }
            _ => false,
        }
    }

    /// Statements up to the end of the input or a closer an enclosing construct waits for.
    pub(super) fn list(&mut self) -> Vec<Stmt> {
        let mut body = Vec::new();
        loop {
            if !self.tick() {
                break;
            }
            self.skip_blanks_and_comment();
            let Some(c) = self.peek() else { break };
            let at = self.pos;
            match c {
                b'\n' => {
                    self.newline();
                    continue;
                }
                b';' => {
                    let len = if self.looking_at(b";;&") {
                        3
                    } else if self.looking_at(b";;") || self.looking_at(b";&") {
                        2
                    } else {
                        1
                    };
                    if len > 1 && self.is_open(Closer::CaseEnd) {
                        break;
                    }
                    self.error(at, "unexpected `;`");
                    self.pos += len;
                    continue;
                }
                b')' => {
                    if self.is_open(Closer::Paren) {
                        break;
                    }
                    self.error(at, "unexpected `)`");
                    self.pos += 1;
                    continue;
                }
                b'&' if !self.looking_at(b"&>") => {
                    self.error(at, "unexpected `&`");
                    self.pos += if self.looking_at(b"&&") { 2 } else { 1 };
                    continue;
                }
                b'|' => {
                    self.error(at, "unexpected `|`");
                    self.pos += if self.looking_at(b"||") || self.looking_at(b"|&") {
                        2
                    } else {
                        1
                    };
                    continue;
                }
                _ => {}
            }
            if let Some((word, len)) = self.reserved()
                && let Some(closer) = word.closer()
            {
                if self.is_open(closer) {
                    break;
                }
                self.error(at, "unexpected keyword");
                self.pos += len;
                continue;
            }
            match self.and_or() {
                Some(stmt) => body.push(stmt),
                None => {
                    if self.stop {
                        break;
                    }
                    if self.pos == at {
                        self.error(at, "unexpected character");
                        self.skip_char();
                    }
                    continue;
                }
            }
            self.separator();
        }
        body
    }

    /// After a statement: `;`, `&`, a newline (left for the list), or what closes the list.
    fn separator(&mut self) {
        self.skip_blanks_and_comment();
        match self.peek() {
            Some(b';') if !self.looking_at(b";;") && !self.looking_at(b";&") => self.pos += 1,
            Some(b'&') if !self.looking_at(b"&&") && !self.looking_at(b"&>") => self.pos += 1,
            None | Some(b'\n' | b';' | b')') => {}
            Some(_) => {
                let closes = self.reserved().is_some_and(|(w, _)| w.closer().is_some());
                if !closes && !self.stop {
                    let at = self.pos;
                    self.error(at, "expected `;` or a newline");
                }
            }
        }
    }

    /// `a && b || c`.
    fn and_or(&mut self) -> Option<Stmt> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            self.skip_blanks();
            let op = if self.looking_at(b"&&") {
                AndOrOp::And
            } else if self.looking_at(b"||") {
                AndOrOp::Or
            } else {
                break;
            };
            let at = self.pos;
            self.pos += 2;
            self.skip_space();
            match self.pipeline() {
                Some(stmt) => rest.push((op, stmt)),
                None => {
                    self.error(at, "missing command after `&&` or `||`");
                    break;
                }
            }
        }
        let Some((_, last)) = rest.last() else {
            return Some(first);
        };
        let range = Range {
            start: first.range.start,
            end: last.range.end,
        };
        Some(Stmt {
            range,
            kind: StmtKind::AndOr(AndOr {
                first: Box::new(first),
                rest,
            }),
        })
    }

    /// `! a | b |& c`, `time a | b`.
    fn pipeline(&mut self) -> Option<Stmt> {
        self.skip_blanks();
        let start = self.pos;
        let mut negated = false;
        loop {
            match self.reserved() {
                Some((Reserved::Bang, len)) => {
                    negated = true;
                    self.pos += len;
                    self.skip_blanks();
                }
                Some((Reserved::Time, len)) if self.times_a_compound(len) => {
                    self.pos += len;
                    self.skip_blanks();
                    if self.looking_at(b"-p") && self.peek_at(self.pos + 2).is_none_or(is_meta) {
                        self.pos += 2;
                        self.skip_blanks();
                    }
                }
                _ => break,
            }
        }
        let Some(first) = self.command() else {
            if negated && !self.stop {
                self.error(start, "missing command after `!`");
            }
            return None;
        };
        let mut stages = vec![first];
        loop {
            self.skip_blanks();
            if self.looking_at(b"||") {
                break;
            }
            let len = if self.looking_at(b"|&") {
                2
            } else if self.peek() == Some(b'|') {
                1
            } else {
                break;
            };
            let at = self.pos;
            self.pos += len;
            self.skip_space();
            match self.command() {
                Some(stage) => stages.push(stage),
                None => {
                    self.error(at, "missing command after `|`");
                    break;
                }
            }
        }
        if stages.len() == 1 && !negated {
            return stages.pop();
        }
        let end = stages.last().map_or(self.pos, |s| s.range.end as usize);
        Some(Stmt {
            range: Range::new(start, end),
            kind: StmtKind::Pipeline(Pipeline { negated, stages }),
        })
    }

    /// `time` before a compound command or `!` is the keyword; before a simple command it is
    /// read as a command word (a wrapper, like `nohup`).
    fn times_a_compound(&mut self, len: usize) -> bool {
        let saved = self.pos;
        self.pos += len;
        self.skip_blanks();
        if self.looking_at(b"-p") {
            self.pos += 2;
            self.skip_blanks();
        }
        let compound = self.peek() == Some(b'(')
            || self
                .reserved()
                .is_some_and(|(w, _)| w.starts_compound() || w == Reserved::Bang);
        self.pos = saved;
        compound
    }

    /// One command of a pipeline: compound or simple.
    pub(super) fn command(&mut self) -> Option<Stmt> {
        self.skip_blanks();
        let c = self.peek()?;
        if let Some((word, len)) = self.reserved() {
            if word.starts_compound() {
                return self.compound(word, len);
            }
            if word != Reserved::Time {
                return None;
            }
        }
        if c == b'(' {
            return self.subshell_or_arith();
        }
        self.simple()
    }

    /// A simple command, a declaration, or (`name()`) a function definition.
    fn simple(&mut self) -> Option<Stmt> {
        let start = self.pos;
        let mut command = Simple::default();
        let mut end = start;
        let mut command_end = start;
        loop {
            match self.command_item(&mut command.redirects) {
                Item::End => break,
                Item::Redirect => {
                    end = self.pos;
                    continue;
                }
                Item::Skipped => continue,
                Item::Word => {}
            }
            if command.words.is_empty()
                && let Some(assignment) = self.assignment()
            {
                end = self.pos;
                command_end = self.pos;
                command.assignments.push(assignment);
                continue;
            }
            let Some(word) = self.word(WordMode::Normal) else {
                let at = self.pos;
                self.error(at, "unexpected character");
                self.skip_char();
                continue;
            };
            end = self.pos;
            command_end = self.pos;
            let first = command.words.is_empty() && command.assignments.is_empty();
            if first && self.is_declaration(&word) {
                let redirects = std::mem::take(&mut command.redirects);
                return Some(self.declaration(start, word, redirects));
            }
            command.words.push(word);
            if first && command.redirects.is_empty() && self.function_parens() {
                let name = command.words.pop()?;
                return Some(self.function_body(start, name));
            }
        }
        if command.words.is_empty() && command.assignments.is_empty() && command.redirects.is_empty() {
            return None;
        }
        command.command_range = Range::new(start, command_end);
        Some(Stmt {
            range: Range::new(start, end),
            kind: StmtKind::Simple(command),
        })
    }

    /// What comes next among a simple command's words: the end of the command (a comment, an
    /// operator, the end of input or of the budget), a redirection (read into `redirects`),
    /// a stray `(` skipped with an error, or a word or assignment to read.
    fn command_item(&mut self, redirects: &mut Vec<Redirect>) -> Item {
        self.skip_blanks();
        let Some(c) = self.peek() else { return Item::End };
        if c == b'#' {
            self.skip_line();
            return Item::End;
        }
        if let Some(redirect) = self.redirect() {
            redirects.push(redirect);
            return Item::Redirect;
        }
        let substitution = (c == b'<' || c == b'>') && self.peek_at(self.pos + 1) == Some(b'(');
        if is_meta(c) && !substitution {
            if c == b'(' {
                let at = self.pos;
                self.error(at, "unexpected `(`");
                self.pos += 1;
                return Item::Skipped;
            }
            return Item::End;
        }
        if !self.tick() {
            return Item::End;
        }
        Item::Word
    }

    fn is_declaration(&self, word: &Word) -> bool {
        matches!(&word.parts[..], [WordPart::Literal(r)] if DECLARATIONS.contains(&r.text(self.source)))
    }

    /// `()` after a function's name (consumed when there).
    fn function_parens(&mut self) -> bool {
        let saved = self.pos;
        self.skip_blanks();
        if self.peek() == Some(b'(') {
            self.pos += 1;
            self.skip_blanks();
            if self.peek() == Some(b')') {
                self.pos += 1;
                return true;
            }
        }
        self.pos = saved;
        false
    }

    /// `export A=b C`, `local -r x="$1"`, `declare -a xs=(1 2)`, `unset HISTFILE`.
    fn declaration(&mut self, start: usize, keyword: Word, mut redirects: Vec<Redirect>) -> Stmt {
        let mut args = Vec::new();
        let mut end = self.pos;
        loop {
            match self.command_item(&mut redirects) {
                Item::End => break,
                Item::Redirect => {
                    end = self.pos;
                    continue;
                }
                Item::Skipped => continue,
                Item::Word => {}
            }
            if let Some(assignment) = self.assignment() {
                end = self.pos;
                args.push(DeclarationArg::Assignment(assignment));
                continue;
            }
            match self.word(WordMode::Normal) {
                Some(word) => {
                    end = self.pos;
                    args.push(DeclarationArg::Word(word));
                }
                None => {
                    let at = self.pos;
                    self.error(at, "unexpected character");
                    self.skip_char();
                }
            }
        }
        Stmt {
            range: Range::new(start, end),
            kind: StmtKind::Declaration(Declaration {
                keyword,
                args,
                redirects,
            }),
        }
    }

    /// `name=value`, `name+=value`, `name[i]=value`, `name=(a b)`; nothing consumed if the
    /// word is not an assignment.
    fn assignment(&mut self) -> Option<Assignment> {
        let start = self.pos;
        if !self.peek().is_some_and(is_name_start) {
            return None;
        }
        let mut i = start + 1;
        while self.peek_at(i).is_some_and(is_name_char) {
            i += 1;
        }
        if self.peek_at(i) == Some(b'[') {
            let mut depth = 0u32;
            loop {
                match self.peek_at(i) {
                    Some(b'[') => depth += 1,
                    Some(b']') => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    None | Some(b'\n') => return None,
                    _ => {}
                }
                i += 1;
            }
        }
        let name_end = i;
        let append = self.peek_at(i) == Some(b'+');
        if append {
            i += 1;
        }
        if self.peek_at(i) != Some(b'=') {
            return None;
        }
        self.pos = i + 1;
        let value = if self.peek() == Some(b'(') {
            self.array()
        } else {
            match self.word(WordMode::Normal) {
                Some(word) => AssignValue::Word(word),
                None => AssignValue::Empty,
            }
        };
        Some(Assignment {
            range: Range::new(start, self.pos),
            name: Range::new(start, name_end),
            append,
            value,
        })
    }

    /// `(a "b c" $d)` (at the parenthesis).
    fn array(&mut self) -> AssignValue {
        let open = self.pos;
        self.pos += 1;
        let mut words = Vec::new();
        loop {
            self.skip_space();
            if !self.tick() {
                break;
            }
            match self.peek() {
                None => {
                    self.error(open, "unterminated array");
                    break;
                }
                Some(b')') => {
                    self.pos += 1;
                    break;
                }
                Some(c) if is_meta(c) && !((c == b'<' || c == b'>') && self.peek_at(self.pos + 1) == Some(b'(')) => {
                    let at = self.pos;
                    self.error(at, "unexpected operator in an array");
                    self.pos += 1;
                }
                Some(_) => match self.word(WordMode::Normal) {
                    Some(word) => words.push(word),
                    None => self.skip_char(),
                },
            }
        }
        AssignValue::Array(Range::new(open, self.pos), words)
    }
}
