//! tree-sitter, kept for what still needs a tree-sitter tree: operators' `query` rules (parsed
//! only when a rule set has them).

use crate::budget::Budget;
use crate::facts::Span;
use airlock_protocol::request::Language;
use std::ops::ControlFlow;
use tree_sitter::{Node, Parser, Tree};

pub fn grammar(language: Language) -> tree_sitter::Language {
    match language {
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::Bash => tree_sitter_bash::LANGUAGE.into(),
    }
}

/// Parses under the budget; `None` when the budget ran out (or, in theory, the grammar could not
/// be loaded, which the grammar version tests rule out).
pub fn parse(language: Language, source: &str, budget: &mut Budget) -> Option<Tree> {
    let mut parser = Parser::new();
    if let Err(e) = parser.set_language(&grammar(language)) {
        tracing::error!(error = %e, "tree-sitter grammar does not match the library");
        return None;
    }
    let clock = budget.clock();
    let mut reached = 0usize;
    let mut calls = 0u32;
    let mut give_up = |state: &tree_sitter::ParseState| {
        reached = reached.max(state.current_byte_offset());
        calls = calls.wrapping_add(1);
        if calls.is_multiple_of(16) && clock.passed() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let bytes = source.as_bytes();
    let tree = parser.parse_with_options(
        &mut |offset, _| bytes.get(offset..).unwrap_or_default(),
        None,
        Some(tree_sitter::ParseOptions::new().progress_callback(&mut give_up)),
    );
    if tree.is_none() {
        budget.check_now();
        budget.parsed_to = reached;
    }
    tree
}

/// The span of a node, or the outer span for embedded code.
pub fn span_of(node: Node<'_>, outer: Option<Span>) -> Span {
    if let Some(outer) = outer {
        return outer;
    }
    let start = node.start_position();
    Span {
        line: start.row as u32 + 1,
        column: start.column as u32 + 1,
        start_byte: node.start_byte(),
        end_byte: node.end_byte(),
    }
}
