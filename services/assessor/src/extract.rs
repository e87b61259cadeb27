//! Source text to facts, in the language it is written in: the extractor the engine hands to
//! each request's context (`Context::extract`), so that code inside code is extracted in its own
//! language whichever language carries it.

use crate::budget::Budget;
use crate::context::{Context, SyntaxErrors};
use crate::facts::Span;
use crate::rules::RuleSet;
use airlock_protocol::request::Language;

/// A fresh context for one program.
pub fn context(rules: &RuleSet, budget: Budget, max_depth: u32) -> Context<'_> {
    Context::new(rules, budget, max_depth, extract)
}

fn extract(ctx: &mut Context<'_>, language: Language, source: &str, outer: Option<Span>) -> Option<SyntaxErrors> {
    match language {
        Language::Python => crate::python::extract(ctx, source, outer),
        Language::Bash => crate::shell::extract(ctx, source, outer),
    }
}
