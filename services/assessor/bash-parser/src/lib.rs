//! A hand-written bash parser: source text to a syntax tree with byte ranges (`ast`).
//!
//! It is built for code nobody vouches for. A syntax error is recorded and parsing goes on at
//! the next sensible place (the end of the line, a `;`, a closing keyword), so what follows
//! broken code is still seen; unterminated quotes, substitutions and here-documents end at the
//! end of the input. The work is linear in the input (with a bounded factor for the look-ahead
//! that tells `$((` arithmetic from a nested subshell), nesting deeper than the limit stops the
//! parse where it is (`Script::too_deep_at`), recursion runs on a stack that grows on the heap,
//! and the caller's budget ([`Budget`]) is checked as it goes.
//!
//! `lexer` reads words and their quoted parts, `expansion` what follows a `$` (and process
//! substitutions), `parser` statements, pipelines, lists, simple commands and assignments,
//! `redirect` redirections and here-documents, `compound` the compound commands (`if`, loops,
//! `case`, groups, functions, `[[ ]]`, `(( ))`).

pub mod ast;
mod compound;
mod expansion;
mod lexer;
mod parser;
mod redirect;
#[cfg(test)]
mod tests;

use ast::{Heredoc, Script, SyntaxError};

/// What the caller lets one parse spend, asked as the parse goes (the assessor's is CPU time).
pub trait Budget {
    /// True once the parse must stop.
    fn exhausted(&mut self) -> bool;
}

/// No limit but the input's own length.
pub struct Unlimited;

impl Budget for Unlimited {
    fn exhausted(&mut self) -> bool {
        false
    }
}

/// Runs one step of a recursive walk, moving to a fresh heap-allocated stack segment when the
/// current one runs low. A depth limit bounds the work; this bounds the stack, whatever the
/// caller's thread was given (tokio's blocking pool, a test thread, a debug build's big frames).
/// The parser's own recursion and the walks over its trees (and the assessor's other walks) use
/// it.
pub fn with_stack<R>(step: impl FnOnce() -> R) -> R {
    const RED_ZONE: usize = 64 * 1024;
    const SEGMENT: usize = 1024 * 1024;
    stacker::maybe_grow(RED_ZONE, SEGMENT, step)
}

/// Why a parse gave up before the end of its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBudget {
    /// How far (in bytes) parsing got.
    pub parsed_to: usize,
}

/// Parses `source`. Nesting deeper than `max_depth` (substitutions, compound commands,
/// expansions inside one another) stops the parse at that point: the script holds what came
/// before, and `too_deep_at` says where. `Err` when the budget ran out.
pub fn parse(source: &str, max_depth: u32, budget: &mut dyn Budget) -> Result<Script, OutOfBudget> {
    let mut parser = Parser::new(source, max_depth, budget);
    let body = parser.list();
    parser.finish();
    if parser.out_of_budget {
        return Err(OutOfBudget { parsed_to: parser.pos });
    }
    Ok(Script {
        body,
        heredocs: parser.heredocs,
        errors: parser.errors,
        error_count: parser.error_count,
        too_deep_at: parser.too_deep_at,
    })
}

/// Syntax errors kept with their messages (the count goes on).
const MAX_KEPT_ERRORS: usize = 256;

/// Keywords and tokens that close a construct; a statement list stops at one that an enclosing
/// construct is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closer {
    Then,
    Elif,
    Else,
    Fi,
    Do,
    Done,
    Esac,
    /// `}`
    Brace,
    /// `)`
    Paren,
    /// `;;`, `;&`, `;;&`
    CaseEnd,
}

const CLOSERS: usize = 10;

/// A here-document whose body starts after the next newline.
struct Pending {
    index: u32,
    /// Where the redirection is, for the error if the body never ends.
    at: usize,
    delimiter: String,
    strip_tabs: bool,
    quoted: bool,
}

struct Parser<'s, 'b> {
    source: &'s str,
    bytes: &'s [u8],
    pos: usize,
    /// Parsing stops here (the closing backtick of a substitution being parsed, or the end).
    end: usize,
    heredocs: Vec<Heredoc>,
    pending: Vec<Pending>,
    errors: Vec<SyntaxError>,
    error_count: u32,
    /// How many enclosing constructs wait for each closer.
    open: [u16; CLOSERS],
    depth: u32,
    max_depth: u32,
    /// Set when nothing more may be parsed (too deep, out of budget).
    stop: bool,
    too_deep_at: Option<u32>,
    out_of_budget: bool,
    budget: &'b mut dyn Budget,
}

impl<'s, 'b> Parser<'s, 'b> {
    fn new(source: &'s str, max_depth: u32, budget: &'b mut dyn Budget) -> Parser<'s, 'b> {
        Parser {
            source,
            bytes: source.as_bytes(),
            pos: 0,
            end: source.len(),
            heredocs: Vec::new(),
            pending: Vec::new(),
            errors: Vec::new(),
            error_count: 0,
            open: [0; CLOSERS],
            depth: 0,
            max_depth,
            stop: false,
            too_deep_at: None,
            out_of_budget: false,
            budget,
        }
    }

    /// Whatever is left at the top level once the statement list has stopped: here-documents
    /// that never got a body.
    fn finish(&mut self) {
        if !self.pending.is_empty() && !self.stop {
            let at = self.pos;
            self.error(at, "here-document without a body");
            self.pending.clear();
        }
    }

    fn error(&mut self, offset: usize, message: &'static str) {
        self.error_count = self.error_count.saturating_add(1);
        if self.errors.len() < MAX_KEPT_ERRORS {
            self.errors.push(SyntaxError {
                offset: offset.min(self.source.len()) as u32,
                message,
            });
        }
    }

    /// Counts one unit of work against the budget; stops the parse when it has run out.
    fn tick(&mut self) -> bool {
        if self.stop {
            return false;
        }
        if self.budget.exhausted() {
            self.stop = true;
            self.out_of_budget = true;
            return false;
        }
        true
    }

    /// Runs `inner` one nesting level deeper, on a stack that grows as needed; `None` (and the
    /// parse stops) past the nesting limit.
    fn nested<R>(&mut self, inner: impl FnOnce(&mut Self) -> R) -> Option<R> {
        if self.stop {
            return None;
        }
        if self.depth >= self.max_depth {
            self.stop = true;
            self.too_deep_at = Some(self.pos as u32);
            return None;
        }
        self.depth += 1;
        let result = with_stack(|| inner(self));
        self.depth -= 1;
        Some(result)
    }

    /// Runs `inner` as a fresh statement context (a substitution): the closers the enclosing
    /// constructs wait for mean nothing inside it, except `extra`.
    fn fresh_context<R>(&mut self, extra: Option<Closer>, inner: impl FnOnce(&mut Self) -> R) -> R {
        let saved = std::mem::replace(&mut self.open, [0; CLOSERS]);
        if let Some(closer) = extra {
            self.open[closer as usize] = 1;
        }
        let result = inner(self);
        self.open = saved;
        result
    }

    /// Runs `inner` while the enclosing construct waits for `closers`.
    fn expecting<R>(&mut self, closers: &[Closer], inner: impl FnOnce(&mut Self) -> R) -> R {
        for c in closers {
            self.open[*c as usize] = self.open[*c as usize].saturating_add(1);
        }
        let result = inner(self);
        for c in closers {
            self.open[*c as usize] = self.open[*c as usize].saturating_sub(1);
        }
        result
    }

    fn is_open(&self, closer: Closer) -> bool {
        self.open[closer as usize] > 0
    }
}
