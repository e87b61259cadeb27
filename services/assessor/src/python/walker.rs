//! The state of one walk over a Python file: where facts go, the source and its lines, the
//! names bound so far, and the program being followed. The walk itself is split by concern:
//! statements (`python`), calls (`calls`), expressions (`expressions`), following calls into the
//! file's own functions (`follow`).

use super::program::Program;
use crate::context::Context;
use crate::facts::{Expr, LineIndex, Span};
use rustc_hash::FxHashMap as HashMap;

#[derive(Clone)]
pub(super) enum Bound {
    /// An imported module or member, by qualified name.
    Module(String),
    Var(Expr),
}

pub(super) struct Walker<'c, 'r, 's, 't> {
    pub(super) ctx: &'c mut Context<'r>,
    pub(super) source: &'s str,
    /// Lines of the submitted file; `None` for embedded code, whose facts carry `outer`.
    pub(super) lines: Option<&'s LineIndex>,
    pub(super) outer: Option<Span>,
    pub(super) names: HashMap<String, Bound>,
    /// Functions, classes and what is being followed through them.
    pub(super) program: Program<'t>,
}
