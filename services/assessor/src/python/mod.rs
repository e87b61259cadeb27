//! Python syntax tree to facts.
//!
//! One pass in source order. Names are resolved through a single table that imports and
//! assignments both write, so later bindings shadow earlier ones the way they do at run time
//! (closely enough for a static look: scopes are not modelled). Values keep the data-flow labels
//! of everything they were computed from.

use crate::extract::{Context, SyntaxErrors, with_stack};
use crate::facts::{Binding, BindingKind, Call, Expr, Import, Span, Taints, Value};
use crate::treesitter::{node_text, span_of};
use rustc_hash::FxHashMap as HashMap;
use tree_sitter::{Node, Tree};

/// Sequence displays keep this many elements as values; the rest still yield facts and labels.
const MAX_SEQ_VALUES: usize = 256;

mod calls;
mod expressions;
mod follow;

pub fn extract(ctx: &mut Context<'_>, source: &str, outer: Option<Span>) -> Option<SyntaxErrors> {
    let tree = crate::treesitter::parse(airlock_protocol::request::Language::Python, source, &mut ctx.budget)?;
    let errors = crate::treesitter::syntax_errors(&tree, &mut ctx.budget);
    walk(ctx, &tree, source, outer);
    Some(errors)
}

fn walk(ctx: &mut Context<'_>, tree: &Tree, source: &str, outer: Option<Span>) {
    let mut walker = Walker {
        ctx,
        source,
        outer,
        names: HashMap::default(),
        program: follow::Program::default(),
    };
    walker.visit(tree.root_node(), 0);
}

#[derive(Clone)]
enum Bound {
    /// An imported module or member, by qualified name.
    Module(String),
    Var(Expr),
}

struct Walker<'c, 'r, 's, 't> {
    ctx: &'c mut Context<'r>,
    source: &'s str,
    outer: Option<Span>,
    names: HashMap<String, Bound>,
    /// Functions, classes and what is being followed through them.
    program: follow::Program<'t>,
}

impl<'t> Walker<'_, '_, '_, 't> {
    fn text(&self, node: Node<'t>) -> &str {
        node_text(node, self.source)
    }

    /// A computed value with no path yet starts its path at the expression that made it.
    fn starting_at(&self, value: Expr, node: Node<'t>) -> Expr {
        if value.trail.is_some() || value.is_literal() {
            return value;
        }
        let text = crate::facts::short(self.text(node));
        let line = self.span(node).line;
        Expr {
            trail: Some(std::sync::Arc::new(crate::facts::Trail {
                steps: vec![format!("`{text}` (line {line})")],
            })),
            ..value
        }
    }

    fn span(&self, node: Node<'t>) -> Span {
        span_of(node, self.outer)
    }

    // ---- statements -------------------------------------------------------------------------

    fn visit(&mut self, node: Node<'t>, depth: u32) {
        with_stack(|| self.visit_node(node, depth))
    }

    fn visit_node(&mut self, node: Node<'t>, depth: u32) {
        if self.ctx.stop_at(depth) {
            return;
        }
        self.ctx.reached(node.start_position().row as u32 + 1, self.outer);
        match node.kind() {
            "module"
            | "block"
            | "expression_statement"
            | "if_statement"
            | "elif_clause"
            | "else_clause"
            | "try_statement"
            | "finally_clause"
            | "decorated_definition"
            | "match_statement"
            | "case_clause"
            | "raise_statement"
            | "delete_statement"
            | "print_statement"
            | "ERROR"
            | "with_clause"
            | "except_group_clause" => self.visit_children(node, depth),
            "import_statement" => self.import(node),
            "import_from_statement" => self.import_from(node),
            "future_import_statement"
            | "comment"
            | "pass_statement"
            | "break_statement"
            | "continue_statement"
            | "global_statement"
            | "nonlocal_statement" => {}
            "with_statement" => self.with_statement(node, depth),
            "assert_statement" | "except_clause" | "while_statement" => {
                self.structure_fact(node);
                self.visit_children(node, depth);
            }
            "return_statement" => self.return_statement(node, depth),
            "class_definition" => self.class_definition(node, depth),
            "for_statement" => self.for_statement(node, depth),
            "function_definition" => self.function_definition(node, depth),
            "exec_statement" => {
                // Python 2's `exec code`: a call to exec by another spelling.
                let mut call = Call::new("exec".into(), self.span(node));
                if let Some(code) = node.child_by_field_name("code") {
                    let arg = self.expr(code, depth + 1);
                    call.taints = arg.taints;
                    call.args.push(arg);
                }
                self.ctx.python.push_call(call);
            }
            _ => {
                self.expr(node, depth);
            }
        }
    }

    /// Facts about the shape of the code, for rules that are about statements rather than
    /// values: `@assert`, `@except-pass`, `@except-continue` (an except clause that does only
    /// that), `@fork-loop` (a `while` whose body forks).
    fn structure_fact(&mut self, node: Node<'t>) {
        let name = match node.kind() {
            "assert_statement" => Some(("@assert", node)),
            "except_clause" => {
                let mut cursor = node.walk();
                let block = node.named_children(&mut cursor).find(|c| c.kind() == "block");
                block
                    .filter(|b| b.named_child_count() == 1)
                    .and_then(|b| b.named_child(0))
                    .and_then(|only| match only.kind() {
                        "pass_statement" => Some(("@except-pass", node)),
                        "continue_statement" => Some(("@except-continue", node)),
                        _ => None,
                    })
            }
            "while_statement" => node.child_by_field_name("body").and_then(|body| {
                let mut cursor = body.walk();
                body.named_children(&mut cursor)
                    .filter(|s| s.kind() == "expression_statement")
                    .filter_map(|s| s.named_child(0))
                    .find(|call| {
                        call.kind() == "call"
                            && call
                                .child_by_field_name("function")
                                .and_then(|f| f.child_by_field_name("attribute"))
                                .is_some_and(|a| matches!(self.text(a), "fork" | "forkpty"))
                    })
                    .map(|call| ("@fork-loop", call))
            }),
            _ => None,
        };
        if let Some((name, at)) = name {
            let call = Call::new(name.to_string(), self.span(at));
            self.ctx.python.push_call(call);
        }
    }

    fn visit_children(&mut self, node: Node<'t>, depth: u32) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.visit(child, depth + 1);
        }
    }

    fn import(&mut self, node: Node<'t>) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "dotted_name" => {
                    let name = self.text(child).to_string();
                    let first = name.split('.').next().unwrap_or_default().to_string();
                    self.names.insert(first.clone(), Bound::Module(first));
                    self.record_import(name, child);
                }
                "aliased_import" => {
                    let (Some(name), Some(alias)) =
                        (child.child_by_field_name("name"), child.child_by_field_name("alias"))
                    else {
                        continue;
                    };
                    let name = self.text(name).to_string();
                    self.names
                        .insert(self.text(alias).to_string(), Bound::Module(name.clone()));
                    self.record_import(name, child);
                }
                _ => {}
            }
        }
    }

    fn import_from(&mut self, node: Node<'t>) {
        let Some(module) = node.child_by_field_name("module_name") else {
            return;
        };
        let module = self.text(module).to_string();
        self.record_import(module.clone(), node);
        let mut cursor = node.walk();
        for child in node.children_by_field_name("name", &mut cursor) {
            let (name, local) = match child.kind() {
                "aliased_import" => {
                    let (Some(name), Some(alias)) =
                        (child.child_by_field_name("name"), child.child_by_field_name("alias"))
                    else {
                        continue;
                    };
                    (self.text(name).to_string(), self.text(alias).to_string())
                }
                _ => {
                    let name = self.text(child).to_string();
                    (name.clone(), name)
                }
            };
            let qualified = format!("{module}.{name}");
            self.names.insert(local, Bound::Module(qualified.clone()));
            self.record_import(qualified, child);
        }
    }

    fn record_import(&mut self, name: String, node: Node<'t>) {
        let span = self.span(node);
        self.ctx.python.imports.push(Import { name, span });
    }

    fn with_statement(&mut self, node: Node<'t>, depth: u32) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.kind() != "with_clause" {
                self.visit(child, depth + 1);
                continue;
            }
            let mut items = child.walk();
            for item in child.named_children(&mut items) {
                let Some(value) = item.child_by_field_name("value") else {
                    continue;
                };
                if value.kind() == "as_pattern" {
                    // `open(p) as f`: the first named child is the expression, the alias the name.
                    let expr = match value.named_child(0) {
                        Some(e) => {
                            let expr = self.expr(e, depth + 2);
                            self.starting_at(expr, e)
                        }
                        None => Expr::other(Taints::NONE),
                    };
                    if let Some(alias) = value.child_by_field_name("alias") {
                        self.bind_target(alias, expr, depth + 2);
                    }
                } else {
                    self.expr(value, depth + 2);
                }
            }
        }
    }

    fn for_statement(&mut self, node: Node<'t>, depth: u32) {
        let iterated = match node.child_by_field_name("right") {
            Some(right) => self.expr(right, depth + 1),
            None => Expr::other(Taints::NONE),
        };
        let left = node.child_by_field_name("left");
        // A loop over a short literal list is followed once per element; a loop over a
        // directory listing binds the variable to "an entry of that directory".
        let values = follow::loop_values(&iterated, self.program.last_listing.as_ref());
        let body = node.child_by_field_name("body");
        for value in values {
            if let Some(left) = left {
                self.bind_target(left, value, depth + 1);
            }
            if let Some(block) = body {
                self.visit(block, depth + 1);
            }
        }
        if let Some(block) = node.child_by_field_name("alternative") {
            self.visit(block, depth + 1);
        }
    }

    fn function_definition(&mut self, node: Node<'t>, depth: u32) {
        if let Some(parameters) = node.child_by_field_name("parameters") {
            let mut cursor = parameters.walk();
            for parameter in parameters.named_children(&mut cursor) {
                if !matches!(parameter.kind(), "default_parameter" | "typed_default_parameter") {
                    continue;
                }
                let (Some(name), Some(value)) = (
                    parameter.child_by_field_name("name"),
                    parameter.child_by_field_name("value"),
                ) else {
                    continue;
                };
                let value = self.expr(value, depth + 1);
                let binding = Binding {
                    kind: BindingKind::Default,
                    target: self.text(name).to_string(),
                    value,
                    span: self.span(parameter),
                };
                self.ctx.python.push_binding(binding);
            }
        }
        self.define_function(node, depth);
    }

    /// Gives `value` to an assignment target and records the binding.
    fn bind_target(&mut self, target: Node<'t>, value: Expr, depth: u32) {
        if self.ctx.stop_at(depth) {
            return;
        }
        match target.kind() {
            "identifier" | "attribute" => {
                let name = self.text(target).to_string();
                let line = self.span(target).line;
                let value = value.step(|| "a call's result".into(), || format!("`{name}` (line {line})"));
                self.program.note_opened(&name, &value);
                if target.kind() == "attribute"
                    && let Some(object) = target.child_by_field_name("object")
                {
                    self.expr(object, depth + 1);
                }
                let binding = Binding {
                    kind: BindingKind::Assign,
                    target: name.clone(),
                    value: value.clone(),
                    span: self.span(target),
                };
                self.ctx.python.push_binding(binding);
                self.names.insert(name, Bound::Var(value));
            }
            "as_pattern_target" | "parenthesized_expression" => {
                if let Some(inner) = target.named_child(0) {
                    self.bind_target(inner, value, depth + 1);
                }
            }
            "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list" => {
                let mut cursor = target.walk();
                let targets: Vec<Node<'t>> = target.named_children(&mut cursor).collect();
                let parts = match &value.value {
                    Value::Seq(items) if items.len() == targets.len() => Some(items.clone()),
                    _ => None,
                };
                for (i, t) in targets.into_iter().enumerate() {
                    let part = parts
                        .as_ref()
                        .and_then(|p| p.get(i).cloned())
                        .unwrap_or_else(|| Expr::other(value.taints));
                    self.bind_target(t, part, depth + 1);
                }
            }
            "subscript" => {
                // `d[k] = secret` makes d carry the label.
                if let Some(object) = target.child_by_field_name("value") {
                    let key = self.text(object).to_string();
                    if let Some(Bound::Var(existing)) = self.names.get_mut(&key) {
                        existing.taints = existing.taints.union(value.taints);
                    }
                }
            }
            _ => {}
        }
    }

    // ---- expressions ------------------------------------------------------------------------
}
