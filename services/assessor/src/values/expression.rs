//! How a rule's regular expression is read, and the automaton the built-in ones are compiled to
//! when the crate is built.
//!
//! This file is shared with `build.rs` (through `#[path]`), so that the expressions compiled at
//! build time are parsed exactly as the engine parses them at run time: it may use nothing but
//! `regex-syntax`, `regex-automata` and `thiserror` (the build script's dependencies).
//!
//! Rules look at code, paths, commands and URLs, whose meaningful characters are ASCII: classes
//! (`\w`, `\s`, `\b`, `(?i)`) are ASCII, `.` is any byte but a newline, and no group is captured
//! but the match. An expression that names characters beyond ASCII (`[\x{202A}-\x{202E}]`) is
//! read as Unicode, as if written inside `(?u:...)`.

use regex_automata::MatchKind;
use regex_automata::dfa::{StartKind, dense};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_syntax::hir::Hir;

/// An expression read as the engine reads it: ASCII when it reads as ASCII, else as Unicode.
/// The error is the Unicode reading's (the caller says which expression it was).
pub fn parse_regex(pattern: &str) -> Result<Hir, Box<regex_syntax::Error>> {
    let ascii = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern);
    if let Ok(hir) = ascii {
        return Ok(hir);
    }
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .map_err(Box::new)
}

/// The largest automaton built ahead of time. The few expressions whose automaton would be
/// larger (case-insensitive alternations after a counted repetition such as `.{0,40}`) are
/// compiled when first used instead, which keeps the binary's share of them to a few megabytes.
pub const AUTOMATON_SIZE_LIMIT: usize = 512 * 1024;

/// A forward, unanchored DFA that answers "does this expression match anywhere in the text?"
/// exactly as the run-time regex does (it is built from the same syntax tree). It finds no
/// match's start, so reporting where a `text` rule matched still uses the run-time regex.
#[allow(dead_code)] // used by build.rs, which compiles this file on its own
pub fn build_automaton(hir: &Hir) -> Result<dense::DFA<Vec<u32>>, AutomatonError> {
    let nfa = thompson::Compiler::new()
        .configure(thompson::Config::new().which_captures(WhichCaptures::None).utf8(false))
        .build_from_hir(hir)
        .map_err(|e| AutomatonError::Nfa(Box::new(e)))?;
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::LeftmostFirst)
                .start_kind(StartKind::Unanchored)
                .minimize(true)
                .dfa_size_limit(Some(AUTOMATON_SIZE_LIMIT))
                .determinize_size_limit(Some(4 * AUTOMATON_SIZE_LIMIT)),
        )
        .build_from_nfa(&nfa)
        .map_err(|e| AutomatonError::Dfa(Box::new(e)))
}

/// Why an expression has no automaton built ahead of time (it is then compiled when first used).
#[allow(dead_code)] // used by build.rs, which compiles this file on its own
#[derive(Debug, thiserror::Error)]
pub enum AutomatonError {
    #[error(transparent)]
    Nfa(Box<thompson::BuildError>),
    #[error(transparent)]
    Dfa(Box<dense::BuildError>),
}
