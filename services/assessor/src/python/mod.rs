//! Python source to facts.
//!
//! The source is parsed by ruff's parser (error-tolerant: a file with syntax errors still gives a
//! tree of everything it could read), after a look at its tokens that refuses trees too deep to
//! handle (`prescan`). Then one pass in source order. Names are resolved through a single table
//! that imports and assignments both write, so later bindings shadow earlier ones the way they
//! do at run time (closely enough for a static look: scopes are not modelled). Values keep the
//! data-flow labels of everything they were computed from.

use crate::budget::with_stack;
use crate::context::{Context, SyntaxErrors};
use crate::facts::{Binding, BindingKind, Call, Expr, Import, LineIndex, Span, Value};
use ruff_python_ast::{self as ast, Stmt};
use ruff_python_parser::{Mode, ParseOptions};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap as HashMap;

/// The prescan's limit, as a multiple of the walk's nesting limit: the token estimate counts
/// more levels than ruff's tree has (every keyword and operator of a line, brackets twice).
const PRESCAN_FACTOR: u32 = 4;

mod calls;
mod expressions;
mod follow;
mod indirect;
mod prescan;
mod program;
mod walker;

use walker::{Bound, Walker};

pub fn extract(ctx: &mut Context<'_>, source: &str, outer: Option<Span>) -> Option<SyntaxErrors> {
    let limit = ctx.max_depth.saturating_mul(PRESCAN_FACTOR).max(64);
    if let Err(too_deep) = prescan::check_depth(source, limit) {
        ctx.too_deep = true;
        ctx.reached(too_deep.line, outer);
        return None;
    }
    let mut parsed = ruff_python_parser::parse_unchecked(source, ParseOptions::from(Mode::Module));
    if outer.is_none() {
        ctx.trojan = crate::trojan::python(source, parsed.tokens());
    }
    let lines = outer.is_none().then(|| LineIndex::new(source));
    let mut errors = SyntaxErrors::default();
    if let Some(lines) = &lines {
        // An error at the end of the file (a bracket never closed) belongs to the last line of
        // code, not to the empty line after it.
        let end_of_code = source.trim_end().len();
        for error in parsed.errors() {
            let at = usize::from(error.location.start()).min(end_of_code.saturating_sub(1));
            errors.add(lines.span(at, at).line);
        }
    } else {
        for _ in parsed.errors() {
            errors.add(1);
        }
    }
    // Python 2's octal literals (`os.chmod(p, 0777)`) are errors to Python 3 and vanish from its
    // tree; read as the numbers they meant, in place, so that what the code asks for is seen.
    let patched = python2_octals(source, parsed.errors());
    if let Some(patched) = &patched {
        parsed = ruff_python_parser::parse_unchecked(patched, ParseOptions::from(Mode::Module));
    }
    let source = patched.as_deref().unwrap_or(source);
    let ast::Mod::Module(module) = parsed.syntax() else {
        return Some(errors);
    };
    let mut walker = Walker {
        ctx,
        source,
        lines: lines.as_ref(),
        outer,
        names: HashMap::default(),
        program: program::Program::default(),
    };
    walker.suite(&module.body, 0);
    Some(errors)
}

/// `source` with each Python 2 octal literal the parser refused (`0777`) replaced by its value
/// in decimal, padded with spaces to the same length (a decimal never needs more digits than
/// the octal with its leading zero), so every offset stays where it was. `None` when there are
/// none.
fn python2_octals(source: &str, errors: &[ruff_python_parser::ParseError]) -> Option<String> {
    let mut patched: Option<String> = None;
    for error in errors {
        let range = error.location.to_std_range();
        let Some(text) = source.get(range.clone()) else {
            continue;
        };
        let Some(digits) = text.strip_prefix('0').map(|d| d.trim_end_matches(['l', 'L'])) else {
            continue;
        };
        if digits.is_empty() || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            continue;
        }
        let Ok(value) = i64::from_str_radix(digits, 8) else {
            continue;
        };
        let decimal = format!("{value:<width$}", width = text.len());
        if decimal.len() == text.len() {
            patched
                .get_or_insert_with(|| source.to_string())
                .replace_range(range, &decimal);
        }
    }
    patched
}

impl<'t> Walker<'_, '_, '_, 't> {
    fn text(&self, node: &impl Ranged) -> &str {
        self.source.get(node.range().to_std_range()).unwrap_or_default()
    }

    fn span(&self, node: &impl Ranged) -> Span {
        self.span_of(node.range())
    }

    fn span_of(&self, range: TextRange) -> Span {
        match (self.outer, self.lines) {
            (Some(outer), _) => outer,
            (None, Some(lines)) => lines.span(usize::from(range.start()), usize::from(range.end())),
            (None, None) => Span::default(),
        }
    }

    /// A computed value with no path yet starts its path at the expression that made it.
    fn starting_at(&self, value: Expr, node: &ast::Expr) -> Expr {
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

    /// True when a node at `depth` must not be analysed; notes how far the walk got.
    fn stop_at(&mut self, node: &impl Ranged, depth: u32) -> bool {
        if self.ctx.stop_at(depth) {
            return true;
        }
        if self.outer.is_none()
            && let Some(lines) = self.lines
        {
            let line = lines.span(usize::from(node.start()), usize::from(node.start())).line;
            self.ctx.reached(line, None);
        }
        false
    }

    // ---- statements -------------------------------------------------------------------------

    fn suite(&mut self, body: &'t [Stmt], depth: u32) {
        for statement in body {
            self.statement(statement, depth);
        }
    }

    fn statement(&mut self, statement: &'t Stmt, depth: u32) {
        with_stack(|| self.statement_node(statement, depth))
    }

    fn statement_node(&mut self, statement: &'t Stmt, depth: u32) {
        if self.stop_at(statement, depth) {
            return;
        }
        let inner = depth + 1;
        match statement {
            Stmt::Expr(s) => {
                self.expr(&s.value, inner);
            }
            Stmt::Assign(s) => self.assignment(&s.targets, &s.value, inner),
            Stmt::AnnAssign(s) => {
                if let Some(value) = &s.value {
                    self.assignment(std::slice::from_ref(&*s.target), value, inner);
                }
            }
            Stmt::AugAssign(s) => self.augmented_assignment(s, inner),
            Stmt::Import(s) => self.import(s),
            Stmt::ImportFrom(s) => self.import_from(s),
            Stmt::FunctionDef(s) => self.function_definition(s, inner),
            Stmt::ClassDef(s) => self.class_definition(s, inner),
            Stmt::Return(s) => self.return_statement(s, inner),
            Stmt::If(s) => {
                self.expr(&s.test, inner);
                self.suite(&s.body, inner);
                for clause in &s.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.expr(test, inner);
                    }
                    self.suite(&clause.body, inner);
                }
            }
            Stmt::For(s) => self.for_statement(s, inner),
            Stmt::While(s) => {
                self.fork_loop(s);
                self.expr(&s.test, inner);
                self.ctx.python.loop_depth += 1;
                self.suite(&s.body, inner);
                self.ctx.python.loop_depth -= 1;
                self.suite(&s.orelse, inner);
            }
            Stmt::With(s) => self.with_statement(s, inner),
            Stmt::Try(s) => {
                self.suite(&s.body, inner);
                for ast::ExceptHandler::ExceptHandler(handler) in &s.handlers {
                    self.except_handler(handler, inner);
                }
                self.suite(&s.orelse, inner);
                self.suite(&s.finalbody, inner);
            }
            Stmt::Assert(s) => {
                self.structure_fact("@assert", s);
                self.expr(&s.test, inner);
                if let Some(message) = &s.msg {
                    self.expr(message, inner);
                }
            }
            Stmt::Raise(s) => {
                for part in [&s.exc, &s.cause].into_iter().flatten() {
                    self.expr(part, inner);
                }
            }
            Stmt::Delete(s) => {
                for target in &s.targets {
                    self.expr(target, inner);
                }
            }
            Stmt::Match(s) => {
                self.expr(&s.subject, inner);
                for case in &s.cases {
                    if let Some(guard) = &case.guard {
                        self.expr(guard, inner);
                    }
                    self.suite(&case.body, inner);
                }
            }
            Stmt::TypeAlias(s) => {
                self.expr(&s.value, inner);
            }
            Stmt::Global(_)
            | Stmt::Nonlocal(_)
            | Stmt::Pass(_)
            | Stmt::Break(_)
            | Stmt::Continue(_)
            | Stmt::IpyEscapeCommand(_) => {}
        }
    }

    /// Facts about the shape of the code, for rules that are about statements rather than
    /// values: `@assert`, `@except-pass`, `@except-continue` (an except clause that does only
    /// that), `@fork-loop` (a `while` whose body forks).
    fn structure_fact(&mut self, name: &str, at: &impl Ranged) {
        let call = Call::new(name.to_string(), self.span(at));
        self.ctx.python.push_call(call);
    }

    fn except_handler(&mut self, handler: &'t ast::ExceptHandlerExceptHandler, depth: u32) {
        match handler.body.as_slice() {
            [Stmt::Pass(_)] => self.structure_fact("@except-pass", handler),
            [Stmt::Continue(_)] => self.structure_fact("@except-continue", handler),
            _ => {}
        }
        if let Some(kind) = &handler.type_ {
            self.expr(kind, depth);
        }
        self.suite(&handler.body, depth);
    }

    fn fork_loop(&mut self, s: &'t ast::StmtWhile) {
        let fork = s.body.iter().find_map(|statement| match statement {
            Stmt::Expr(e) => match &*e.value {
                ast::Expr::Call(call) => match &*call.func {
                    ast::Expr::Attribute(a) if matches!(a.attr.as_str(), "fork" | "forkpty") => Some(call),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        });
        if let Some(call) = fork {
            self.structure_fact("@fork-loop", call);
        }
    }

    fn import(&mut self, s: &'t ast::StmtImport) {
        for alias in &s.names {
            let name = alias.name.as_str().to_string();
            match &alias.asname {
                Some(local) => {
                    self.names
                        .insert(local.as_str().to_string(), Bound::Module(name.clone()));
                    self.record_import(name, alias);
                }
                None => {
                    let first = name.split('.').next().unwrap_or_default().to_string();
                    self.names.insert(first.clone(), Bound::Module(first));
                    self.record_import(name, &alias.name);
                }
            }
        }
    }

    fn import_from(&mut self, s: &'t ast::StmtImportFrom) {
        // `from . import x` names the module by its dots, as written.
        let level = usize::try_from(s.level).unwrap_or(0).min(64);
        let module = format!(
            "{}{}",
            ".".repeat(level),
            s.module.as_ref().map(|m| m.as_str()).unwrap_or_default()
        );
        if module.is_empty() {
            return;
        }
        self.record_import(module.clone(), s);
        for alias in &s.names {
            let name = alias.name.as_str();
            if name == "*" {
                continue;
            }
            let local = alias.asname.as_ref().unwrap_or(&alias.name).as_str().to_string();
            let qualified = format!("{module}.{name}");
            self.names.insert(local, Bound::Module(qualified.clone()));
            if alias.asname.is_some() {
                self.record_import(qualified, alias);
            } else {
                self.record_import(qualified, &alias.name);
            }
        }
    }

    fn record_import(&mut self, name: String, node: &impl Ranged) {
        let span = self.span(node);
        self.ctx.python.imports.push(Import { name, span });
    }

    fn assignment(&mut self, targets: &'t [ast::Expr], value_node: &'t ast::Expr, depth: u32) {
        let value = self.expr(value_node, depth);
        let value = self.starting_at(value, value_node);
        // `a = b = v` binds the innermost target first, as it reads right to left.
        for target in targets.iter().rev() {
            self.bind_target(target, value.clone(), depth);
            if let ast::Expr::Name(name) = target {
                match value_node {
                    ast::Expr::Lambda(lambda) => {
                        self.program.lambdas.insert(name.id.to_string(), lambda);
                    }
                    _ => {
                        self.program.lambdas.remove(name.id.as_str());
                    }
                }
            }
        }
    }

    fn augmented_assignment(&mut self, s: &'t ast::StmtAugAssign, depth: u32) {
        let addition = self.expr(&s.value, depth);
        let previous = self.expr(&s.target, depth);
        let combined = match (s.op, &previous.value, &addition.value) {
            (ast::Operator::Add, Value::Str(a), Value::Str(b)) => Value::Str(format!("{a}{b}")),
            (ast::Operator::Add, Value::Str(a) | Value::Formatted(a), _) => {
                Value::Formatted(format!("{a}{}", addition.text().unwrap_or("{}".into())))
            }
            _ => Value::Other,
        };
        let value = Expr {
            value: combined,
            taints: previous.taints.union(addition.taints),
            trail: None,
        };
        if let ast::Expr::Name(name) = &*s.target {
            self.names.insert(name.id.to_string(), Bound::Var(value));
        }
    }

    fn with_statement(&mut self, s: &'t ast::StmtWith, depth: u32) {
        for item in &s.items {
            let value = self.expr(&item.context_expr, depth + 1);
            if let Some(target) = &item.optional_vars {
                // `with open(p) as f`: f holds what the expression made.
                let value = self.starting_at(value, &item.context_expr);
                self.bind_target(target, value, depth + 1);
            }
        }
        self.suite(&s.body, depth);
    }

    fn for_statement(&mut self, s: &'t ast::StmtFor, depth: u32) {
        let iterated = self.expr(&s.iter, depth);
        // A loop over a short literal list is followed once per element; a loop over a
        // directory listing binds the variable to "an entry of that directory".
        let values = program::loop_values(&iterated, self.program.last_listing.as_ref());
        self.ctx.python.loop_depth += 1;
        for value in values {
            self.bind_target(&s.target, value, depth);
            self.suite(&s.body, depth);
        }
        self.ctx.python.loop_depth -= 1;
        self.suite(&s.orelse, depth);
    }

    fn function_definition(&mut self, s: &'t ast::StmtFunctionDef, depth: u32) {
        for decorator in &s.decorator_list {
            self.expr(&decorator.expression, depth);
        }
        for parameter in s.parameters.iter_non_variadic_params() {
            let Some(default) = &parameter.default else {
                continue;
            };
            let value = self.expr(default, depth);
            let binding = Binding {
                kind: BindingKind::Default,
                target: parameter.parameter.name.as_str().to_string(),
                value,
                span: self.span(parameter),
            };
            self.ctx.python.push_binding(binding);
        }
        self.define_function(s, depth);
    }

    /// Gives `value` to an assignment target and records the binding.
    fn bind_target(&mut self, target: &'t ast::Expr, value: Expr, depth: u32) {
        if self.stop_at(target, depth) {
            return;
        }
        match target {
            ast::Expr::Name(_) | ast::Expr::Attribute(_) => {
                let name = self.text(target).to_string();
                let line = self.span(target).line;
                let value = value.step(|| "a call's result".into(), || format!("`{name}` (line {line})"));
                self.program.note_opened(&name, &value);
                if let ast::Expr::Attribute(attribute) = target {
                    self.expr(&attribute.value, depth + 1);
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
            ast::Expr::Starred(starred) => self.bind_target(&starred.value, value, depth + 1),
            ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }) => {
                let parts = match &value.value {
                    Value::Seq(items) if items.len() == elts.len() => Some(items.clone()),
                    _ => None,
                };
                for (i, element) in elts.iter().enumerate() {
                    let part = parts
                        .as_ref()
                        .and_then(|p| p.get(i).cloned())
                        .unwrap_or_else(|| Expr::other(value.taints));
                    self.bind_target(element, part, depth + 1);
                }
            }
            ast::Expr::Subscript(subscript) => {
                // `d[k] = secret` makes d carry the label.
                let key = self.text(&*subscript.value).to_string();
                if let Some(Bound::Var(existing)) = self.names.get_mut(&key) {
                    existing.taints = existing.taints.union(value.taints);
                }
                self.expr(&subscript.slice, depth + 1);
            }
            _ => {}
        }
    }
}
