//! Which of a script's functions can run: those whose name occurs at the top level (a call, a
//! `trap`, `complete -F`, `PROMPT_COMMAND=`, an alias, even a comment), or inside a function
//! that can run. A plugin's or a library's functions, there for an interactive shell that
//! sources the file, are named nowhere and do not run when the file does; nor do helpers only
//! such functions call.

use airlock_bash_parser::ast::{CompoundKind, Range, Stmt, StmtKind};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A function's definition: its name, where the name is written, and its body's extent.
struct Definition<'s> {
    name: &'s str,
    name_start: u32,
    body: Range,
}

/// The names of the functions defined in `body` that can run (empty when none is defined).
pub(super) fn runnable_functions(body: &[Stmt], source: &str) -> HashSet<String> {
    let mut definitions = Vec::new();
    collect(body, source, &mut definitions);
    if definitions.is_empty() {
        return HashSet::default();
    }
    let defined: HashSet<&str> = definitions.iter().map(|d| d.name).collect();
    let name_starts: HashSet<u32> = definitions.iter().map(|d| d.name_start).collect();
    // Bodies nest (they are syntax), so one sweep in source order finds each occurrence's
    // innermost enclosing body: the top of a stack of the bodies open at that point. Linear in
    // the words and definitions, where a search of every definition per word was quadratic in
    // a file of many small functions (this runs before the walk and its time budget).
    let mut by_start: Vec<&Definition<'_>> = definitions.iter().collect();
    by_start.sort_by_key(|d| (d.body.start, std::cmp::Reverse(d.body.end)));
    let mut next = by_start.iter().peekable();
    let mut open: Vec<&Definition<'_>> = Vec::new();
    let mut roots: Vec<&str> = Vec::new();
    let mut named_in: HashMap<&str, Vec<&str>> = HashMap::default();
    for (start, word) in words(source) {
        let at = start as u32;
        while let Some(d) = next.next_if(|d| d.body.start <= at) {
            while open.last().is_some_and(|o| o.body.end <= d.body.start) {
                open.pop();
            }
            open.push(d);
        }
        while open.last().is_some_and(|o| o.body.end <= at) {
            open.pop();
        }
        if !defined.contains(word) || name_starts.contains(&at) {
            continue;
        }
        match open.last() {
            Some(container) => named_in.entry(container.name).or_default().push(word),
            None => roots.push(word),
        }
    }
    let mut runnable: HashSet<String> = HashSet::default();
    while let Some(name) = roots.pop() {
        if runnable.insert(name.to_string())
            && let Some(named) = named_in.get(name)
        {
            roots.extend(named.iter().copied());
        }
    }
    runnable
}

/// Words as a function name is written (letters, digits, `_`, `-`, `.`, `:`), with where each
/// starts.
fn words(source: &str) -> impl Iterator<Item = (usize, &str)> {
    let is_name = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':');
    let mut start = None;
    source
        .char_indices()
        .chain(std::iter::once((source.len(), ' ')))
        .filter_map(move |(i, c)| match (is_name(c), start) {
            (true, None) => {
                start = Some(i);
                None
            }
            (false, Some(s)) => {
                start = None;
                Some((s, &source[s..i]))
            }
            _ => None,
        })
}

fn collect<'s>(list: &[Stmt], source: &'s str, out: &mut Vec<Definition<'s>>) {
    for stmt in list {
        collect_stmt(stmt, source, out);
    }
}

fn collect_stmt<'s>(stmt: &Stmt, source: &'s str, out: &mut Vec<Definition<'s>>) {
    crate::budget::with_stack(|| collect_kind(stmt, source, out));
}

fn collect_kind<'s>(stmt: &Stmt, source: &'s str, out: &mut Vec<Definition<'s>>) {
    match &stmt.kind {
        StmtKind::Function(function) => {
            let range = function.name.range;
            out.push(Definition {
                name: range.text(source),
                name_start: range.start,
                body: function.body.range,
            });
            collect_stmt(&function.body, source, out);
        }
        StmtKind::Pipeline(pipeline) => collect(&pipeline.stages, source, out),
        StmtKind::AndOr(list) => {
            collect_stmt(&list.first, source, out);
            for (_, stmt) in &list.rest {
                collect_stmt(stmt, source, out);
            }
        }
        StmtKind::Compound(compound) => match &compound.kind {
            CompoundKind::Group(body) | CompoundKind::Subshell(body) | CompoundKind::ArithFor(_, body) => {
                collect(body, source, out)
            }
            CompoundKind::If(clause) => {
                for (condition, body) in &clause.branches {
                    collect(condition, source, out);
                    collect(body, source, out);
                }
                if let Some(body) = &clause.otherwise {
                    collect(body, source, out);
                }
            }
            CompoundKind::While(clause) => {
                collect(&clause.condition, source, out);
                collect(&clause.body, source, out);
            }
            CompoundKind::For(clause) => collect(&clause.body, source, out),
            CompoundKind::Case(case) => {
                for item in &case.items {
                    collect(&item.body, source, out);
                }
            }
            CompoundKind::Coproc(stmt) => collect_stmt(stmt, source, out),
            CompoundKind::Test(_) | CompoundKind::Arith(_) => {}
        },
        StmtKind::Simple(_) | StmtKind::Declaration(_) => {}
    }
}
