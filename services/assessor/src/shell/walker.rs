//! The state of one walk over a shell script: where facts go, the source, its here-documents and
//! lines, variables and functions so far, what is being followed, and where a command sits in
//! its pipeline. The walk itself is split by concern: statements and commands (`shell`), words
//! and expansions (`words`), redirections (`redirects`), following function calls and loops
//! (`follow`).

use crate::context::Context;
use crate::facts::{Expr, LineIndex, Span, Taints};
use airlock_bash_parser::ast::{CompoundKind, Declaration, Heredoc, Simple, Stmt};
use rustc_hash::FxHashMap as HashMap;

/// Where a command sits in its pipeline.
#[derive(Clone, Default)]
pub(super) struct Pipe {
    pub(super) stdin: Taints,
    pub(super) from: Vec<String>,
    pub(super) to: Vec<String>,
}

impl Pipe {
    /// The same place in the pipeline, with `stdin` as its input.
    pub(super) fn with_stdin(&self, stdin: Taints) -> Pipe {
        Pipe {
            stdin,
            from: self.from.clone(),
            to: self.to.clone(),
        }
    }
}

pub(super) struct Walker<'c, 'r, 's> {
    pub(super) ctx: &'c mut Context<'r>,
    pub(super) source: &'s str,
    pub(super) heredocs: &'s [Heredoc],
    pub(super) lines: &'s LineIndex,
    pub(super) outer: Option<Span>,
    pub(super) vars: HashMap<String, Expr>,
    /// Shell functions defined so far, by name: a call runs the body with `$1…` bound.
    pub(super) functions: HashMap<String, &'s Stmt>,
    /// `$1…` of the function being followed; `None` at the top level (the request's arguments).
    pub(super) positional: Option<Vec<Expr>>,
    /// Functions being followed (no recursion) and how many calls were followed in all.
    pub(super) calling: Vec<String>,
    pub(super) followed: usize,
    /// Nesting depth of the statement being visited (for functions followed from a command).
    pub(super) depth: u32,
    /// The directory of the latest literal `cd`, against which relative operands are read.
    pub(super) cwd: Option<String>,
    /// Bytes of variable values copied into words so far (bounded by `MAX_EXPANDED_TEXT`).
    pub(super) expanded: usize,
    /// Inside a function's body visited as written (not from a call): its `$1…` are whatever a
    /// caller passes, not the request's arguments.
    pub(super) in_definition: u32,
    /// The functions that can run (named at the top level or by a function that can run).
    pub(super) runnable: rustc_hash::FxHashSet<String>,
    /// Bodies of the other functions (with their depth), not visited as written: they run only
    /// if the script calls commands by names it only knows at run time.
    pub(super) never_called: Vec<(String, &'s Stmt, u32)>,
    /// Commands named by a literal prefix and a value known at run time
    /// (`__powerline_"$segment"_prompt`): one of the script's functions of that family when it
    /// defines some, else a program the assessor cannot follow (decided at the end of the walk).
    pub(super) dispatched: Vec<Dispatch>,
    /// What the latest `echo` or `printf` of the pipeline stage being visited printed.
    pub(super) printed: Option<Expr>,
    /// What the stage before the one being visited feeds it (see `piped`).
    pub(super) piped: Option<Piped>,
}

/// What a pipeline stage feeds the next one, when that one reads its program from the pipe.
pub(super) enum Piped {
    /// The words `echo` or `printf` printed.
    Printed(Expr),
    /// Another command's output.
    Other,
}

/// A command whose name is `prefix`, something known only at run time, then `suffix`.
pub(super) struct Dispatch {
    pub(super) prefix: String,
    pub(super) suffix: String,
    /// The fact that says the program is unknown, kept for when no function matches.
    pub(super) unknown: crate::facts::Call,
}

/// What a redirection applies to.
#[derive(Clone, Copy)]
pub(super) enum Body<'s> {
    Simple(&'s Simple),
    Declaration(&'s Declaration),
    Compound(&'s CompoundKind),
}
