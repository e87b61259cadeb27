//! Compound commands: `if`, `while`/`until`, `for`/`select` (and C-style `for ((...))`),
//! `case`, `{ ...; }`, `( ... )`, `[[ ... ]]`, `(( ... ))`, `coproc`, and function definitions.

use super::ast::{
    Case, CaseItem, Compound, CompoundKind, For, Function, If, Parts, Range, Stmt, StmtKind, While, Word, WordPart,
};
use super::expansion::ArithEnd;
use super::lexer::{WordMode, is_blank, is_meta, is_name_char, is_name_start};
use super::parser::Reserved;
use super::{Closer, Parser};

impl Parser<'_, '_> {
    /// The compound command that the reserved word `word` (of `len` bytes, at the position)
    /// starts, with the redirections after it.
    pub(super) fn compound(&mut self, word: Reserved, len: usize) -> Option<Stmt> {
        let start = self.pos;
        if word == Reserved::Function {
            return self.function_keyword(start, len);
        }
        let kind = self.nested(|p| match word {
            Reserved::If => Some(p.if_clause(len)),
            Reserved::While | Reserved::Until => Some(p.while_clause(word == Reserved::Until, len)),
            Reserved::For | Reserved::Select => Some(p.for_clause(word == Reserved::Select, len)),
            Reserved::Case => Some(p.case_clause(len)),
            Reserved::LeftBrace => Some(p.group(len)),
            Reserved::DoubleBracket => Some(p.test_clause(len)),
            Reserved::Coproc => p.coproc(len),
            _ => None,
        })??;
        Some(self.with_redirects(start, kind))
    }

    /// `( ... )` or `(( ... ))` (at the parenthesis).
    pub(super) fn subshell_or_arith(&mut self) -> Option<Stmt> {
        let start = self.pos;
        let arithmetic = self.peek_at(start + 1) == Some(b'(') && self.is_arithmetic(start);
        let kind = self.nested(|p| {
            if arithmetic {
                p.pos = start + 2;
                match p.arith(start, ArithEnd::Parens) {
                    WordPart::Arith(_, parts) => CompoundKind::Arith(parts),
                    _ => CompoundKind::Arith(Vec::new()),
                }
            } else {
                p.pos = start + 1;
                let body = p.expecting(&[Closer::Paren], |p| p.list());
                p.close_paren(start, "`(` without `)`");
                CompoundKind::Subshell(body)
            }
        })?;
        Some(self.with_redirects(start, kind))
    }

    fn with_redirects(&mut self, start: usize, kind: CompoundKind) -> Stmt {
        let mut redirects = Vec::new();
        let mut end = self.pos;
        loop {
            self.skip_blanks();
            match self.redirect() {
                Some(redirect) => {
                    end = self.pos;
                    redirects.push(redirect);
                }
                None => break,
            }
        }
        Stmt {
            range: Range::new(start, end),
            kind: StmtKind::Compound(Compound { kind, redirects }),
        }
    }

    fn missing(&mut self, message: &'static str) {
        if !self.stop {
            let at = self.pos;
            self.error(at, message);
        }
    }

    fn if_clause(&mut self, len: usize) -> CompoundKind {
        self.pos += len;
        self.expecting(&[Closer::Then, Closer::Elif, Closer::Else, Closer::Fi], |p| {
            let mut branches = Vec::new();
            let mut otherwise = None;
            let mut condition = p.list();
            loop {
                if !p.take_reserved(Reserved::Then) {
                    p.missing("`if` without `then`");
                }
                let body = p.list();
                branches.push((condition, body));
                if p.take_reserved(Reserved::Elif) {
                    condition = p.list();
                    continue;
                }
                if p.take_reserved(Reserved::Else) {
                    otherwise = Some(p.list());
                }
                if !p.take_reserved(Reserved::Fi) {
                    p.missing("`if` without `fi`");
                }
                break;
            }
            CompoundKind::If(If { branches, otherwise })
        })
    }

    fn while_clause(&mut self, until: bool, len: usize) -> CompoundKind {
        self.pos += len;
        self.expecting(&[Closer::Do, Closer::Done], |p| {
            let condition = p.list();
            let body = p.do_group();
            CompoundKind::While(While { until, condition, body })
        })
    }

    /// `do ... done` (or, after `for`, `{ ...; }`).
    fn do_group(&mut self) -> Vec<Stmt> {
        self.skip_space();
        if self.take_reserved(Reserved::Do) {
            let body = self.expecting(&[Closer::Done], |p| p.list());
            if !self.take_reserved(Reserved::Done) {
                self.missing("`do` without `done`");
            }
            return body;
        }
        if let Some((Reserved::LeftBrace, len)) = self.reserved() {
            return match self.group(len) {
                CompoundKind::Group(body) => body,
                _ => Vec::new(),
            };
        }
        self.missing("loop without `do`");
        Vec::new()
    }

    fn for_clause(&mut self, select: bool, len: usize) -> CompoundKind {
        self.pos += len;
        self.skip_blanks();
        if !select && self.looking_at(b"((") {
            let start = self.pos;
            self.pos += 2;
            let parts = match self.arith(start, ArithEnd::Parens) {
                WordPart::Arith(_, parts) => parts,
                _ => Vec::new(),
            };
            self.skip_blanks();
            if self.peek() == Some(b';') {
                self.pos += 1;
            }
            let body = self.expecting(&[Closer::Do, Closer::Done], |p| p.do_group());
            return CompoundKind::ArithFor(parts, body);
        }
        let name_start = self.pos;
        while self.peek().is_some_and(is_name_char) {
            self.pos += 1;
        }
        let variable = Range::new(name_start, self.pos);
        if variable.is_empty() {
            self.missing("`for` without a variable name");
            // Whatever word is there stands for the name.
            let _ = self.word(WordMode::Normal);
        }
        self.skip_space();
        let mut words = None;
        if self.looking_at(b"in") && self.peek_at(self.pos + 2).is_none_or(is_meta) {
            self.pos += 2;
            let mut list = Vec::new();
            loop {
                self.skip_blanks();
                match self.peek() {
                    None | Some(b'\n' | b';' | b'&' | b')' | b'|') => break,
                    Some(b'#') => {
                        self.skip_line();
                        break;
                    }
                    Some(_) => {
                        if !self.tick() {
                            break;
                        }
                        match self.word(WordMode::Normal) {
                            Some(word) => list.push(word),
                            None => {
                                let at = self.pos;
                                self.error(at, "unexpected character in a `for` list");
                                self.skip_char();
                            }
                        }
                    }
                }
            }
            words = Some(list);
        }
        self.skip_blanks();
        if self.peek() == Some(b';') && !self.looking_at(b";;") {
            self.pos += 1;
        }
        let body = self.expecting(&[Closer::Do, Closer::Done], |p| p.do_group());
        CompoundKind::For(For {
            select,
            variable,
            words,
            body,
        })
    }

    fn case_clause(&mut self, len: usize) -> CompoundKind {
        self.pos += len;
        self.skip_blanks();
        let at = self.pos;
        let word = self.word(WordMode::Normal).unwrap_or_else(|| {
            self.missing("`case` without a word");
            Word {
                range: Range::new(at, at),
                parts: Parts::default(),
            }
        });
        self.skip_space();
        if self.looking_at(b"in") && self.peek_at(self.pos + 2).is_none_or(is_meta) {
            self.pos += 2;
        } else {
            self.missing("`case` without `in`");
        }
        let items = self.expecting(&[Closer::Esac, Closer::CaseEnd], |p| p.case_items());
        CompoundKind::Case(Case { word, items })
    }

    fn case_items(&mut self) -> Vec<CaseItem> {
        let mut items = Vec::new();
        loop {
            self.skip_space();
            if !self.tick() {
                break;
            }
            let at = self.pos;
            match self.reserved() {
                Some((Reserved::Esac, len)) => {
                    self.pos += len;
                    break;
                }
                // `done)` is a pattern; `done` alone closes what encloses a `case` without `esac`.
                Some((word, len)) if self.closes_enclosing(word) && !self.pattern_follows(len) => {
                    self.missing("`case` without `esac`");
                    break;
                }
                _ => {}
            }
            match self.peek() {
                None => {
                    self.missing("`case` without `esac`");
                    break;
                }
                Some(b')') if self.is_open(Closer::Paren) => {
                    self.missing("`case` without `esac`");
                    break;
                }
                Some(b'(') => self.pos += 1,
                _ => {}
            }
            let mut patterns = Vec::new();
            loop {
                self.skip_blanks();
                match self.word(WordMode::Normal) {
                    Some(word) => patterns.push(word),
                    None => break,
                }
                self.skip_blanks();
                if self.peek() == Some(b'|') && !self.looking_at(b"||") {
                    self.pos += 1;
                    continue;
                }
                break;
            }
            if self.peek() == Some(b')') {
                self.pos += 1;
            } else {
                self.missing("case pattern without `)`");
            }
            let body = self.list();
            if self.looking_at(b";;&") {
                self.pos += 3;
            } else if self.looking_at(b";;") || self.looking_at(b";&") {
                self.pos += 2;
            }
            items.push(CaseItem { patterns, body });
            if self.pos == at {
                self.error(at, "unexpected character in `case`");
                self.skip_char();
            }
        }
        items
    }

    /// Whether the word of `len` bytes at the position is followed by `)` or `|` (a pattern).
    fn pattern_follows(&self, len: usize) -> bool {
        let mut i = self.pos + len;
        while self.peek_at(i).is_some_and(is_blank) {
            i += 1;
        }
        matches!(self.peek_at(i), Some(b')' | b'|'))
    }

    /// A closing keyword that an enclosing construct (not this `case`) waits for.
    fn closes_enclosing(&self, word: Reserved) -> bool {
        word.closer()
            .is_some_and(|closer| closer != Closer::Esac && self.is_open(closer))
    }

    /// `{ ...; }` (at the brace).
    fn group(&mut self, len: usize) -> CompoundKind {
        self.pos += len;
        let body = self.expecting(&[Closer::Brace], |p| p.list());
        if !self.take_reserved(Reserved::RightBrace) {
            self.missing("`{` without `}`");
        }
        CompoundKind::Group(body)
    }

    /// `[[ ... ]]`: its words; operators are left out.
    fn test_clause(&mut self, len: usize) -> CompoundKind {
        self.pos += len;
        let mut words = Vec::new();
        loop {
            self.skip_space();
            if !self.tick() {
                break;
            }
            let Some(c) = self.peek() else {
                self.missing("`[[` without `]]`");
                break;
            };
            if self.looking_at(b"]]") && self.peek_at(self.pos + 2).is_none_or(is_meta) {
                self.pos += 2;
                break;
            }
            if self.looking_at(b"&&") || self.looking_at(b"||") {
                self.pos += 2;
                continue;
            }
            if self.looking_at(b"=~") && self.peek_at(self.pos + 2).is_some_and(is_blank) {
                self.pos += 2;
                self.skip_blanks();
                if let Some(word) = self.word(WordMode::Regex) {
                    words.push(word);
                }
                continue;
            }
            let substitution = (c == b'<' || c == b'>') && self.peek_at(self.pos + 1) == Some(b'(');
            if matches!(c, b'(' | b')' | b'<' | b'>') && !substitution
                || c == b'!' && self.peek_at(self.pos + 1).is_none_or(is_meta)
            {
                self.pos += 1;
                continue;
            }
            if matches!(c, b';' | b'&' | b'|') {
                let at = self.pos;
                self.error(at, "unexpected operator in `[[ ]]`");
                self.pos += 1;
                continue;
            }
            match self.word(WordMode::Normal) {
                Some(word) => words.push(word),
                None => {
                    let at = self.pos;
                    self.error(at, "unexpected character in `[[ ]]`");
                    self.skip_char();
                }
            }
        }
        CompoundKind::Test(words)
    }

    /// `coproc [NAME] command`.
    fn coproc(&mut self, len: usize) -> Option<CompoundKind> {
        self.pos += len;
        self.skip_blanks();
        let saved = self.pos;
        if self.reserved().is_none() && self.peek().is_some_and(is_name_start) {
            while self.peek().is_some_and(is_name_char) {
                self.pos += 1;
            }
            self.skip_blanks();
            let compound_next = self.peek() == Some(b'(')
                || self
                    .reserved()
                    .is_some_and(|(w, _)| w.starts_compound() && w != Reserved::Function);
            if !compound_next {
                self.pos = saved;
            }
        }
        match self.command() {
            Some(body) => Some(CompoundKind::Coproc(Box::new(body))),
            None => {
                self.missing("`coproc` without a command");
                None
            }
        }
    }

    /// `function name [()] body` (at the keyword).
    fn function_keyword(&mut self, start: usize, len: usize) -> Option<Stmt> {
        self.pos += len;
        self.skip_blanks();
        let at = self.pos;
        let name = match self.word(WordMode::Normal) {
            Some(name) => name,
            None => {
                self.missing("`function` without a name");
                Word {
                    range: Range::new(at, at),
                    parts: Parts::default(),
                }
            }
        };
        self.skip_blanks();
        if self.peek() == Some(b'(') {
            self.pos += 1;
            self.skip_blanks();
            if self.peek() == Some(b')') {
                self.pos += 1;
            } else {
                self.missing("`function name(` without `)`");
            }
        }
        Some(self.function_body(start, name))
    }

    /// The body of a function whose name (and parentheses) have been read.
    pub(super) fn function_body(&mut self, start: usize, name: Word) -> Stmt {
        self.skip_space();
        let body = match self.nested(|p| p.command()).flatten() {
            Some(body) => body,
            None => {
                self.missing("function without a body");
                Stmt {
                    range: Range::new(self.pos, self.pos),
                    kind: StmtKind::Compound(Compound {
                        kind: CompoundKind::Group(Vec::new()),
                        redirects: Vec::new(),
                    }),
                }
            }
        };
        Stmt {
            range: Range::new(start, body.range.end as usize),
            kind: StmtKind::Function(Function {
                name,
                body: Box::new(body),
            }),
        }
    }
}
