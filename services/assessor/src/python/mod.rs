//! Python syntax tree to facts.
//!
//! One pass in source order. Names are resolved through a single table that imports and
//! assignments both write, so later bindings shadow earlier ones the way they do at run time
//! (closely enough for a static look: scopes are not modelled). Values keep the data-flow labels
//! of everything they were computed from.

use crate::extract::{Context, node_text, span_of, with_stack};
use crate::facts::{Binding, BindingKind, Call, Expr, Import, NameRef, Span, StringLit, Taints, Value};
use crate::rules::Embedded;
use airlock_protocol::request::Language;
use rustc_hash::FxHashMap as HashMap;
use tree_sitter::{Node, Tree};

/// Sequence displays keep this many elements as values; the rest still yield facts and labels.
const MAX_SEQ_VALUES: usize = 256;

mod follow;

pub fn extract(ctx: &mut Context<'_>, tree: &Tree, source: &str, outer: Option<Span>) {
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
        self.ctx.saw(node, self.outer);
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

    fn expr(&mut self, node: Node<'t>, depth: u32) -> Expr {
        with_stack(|| self.expr_node(node, depth))
    }

    fn expr_node(&mut self, node: Node<'t>, depth: u32) -> Expr {
        if self.ctx.stop_at(depth) {
            return Expr::other(Taints::NONE);
        }
        self.ctx.saw(node, self.outer);
        match node.kind() {
            "string" => self.string(node, depth),
            "concatenated_string" => self.concatenated_string(node, depth),
            "integer" => Expr::new(parse_int(self.text(node)).map_or(Value::Other, Value::Int)),
            "float" => Expr::new(self.text(node).parse().map_or(Value::Other, Value::Float)),
            "true" => Expr::new(Value::Bool(true)),
            "false" => Expr::new(Value::Bool(false)),
            "none" => Expr::new(Value::None),
            "identifier" => self.identifier(node),
            "attribute" => self.attribute(node, depth),
            "call" => self.call(node, depth),
            "assignment" => self.assignment(node, depth),
            "augmented_assignment" => self.augmented_assignment(node, depth),
            "named_expression" => {
                let value = match node.child_by_field_name("value") {
                    Some(v) => self.expr(v, depth + 1),
                    None => Expr::other(Taints::NONE),
                };
                if let Some(name) = node.child_by_field_name("name") {
                    self.bind_target(name, value.clone(), depth + 1);
                }
                value
            }
            "binary_operator" => self.binary_operator(node, depth),
            "comparison_operator" => self.comparison(node, depth),
            "unary_operator" => {
                let operand = match node.child_by_field_name("argument") {
                    Some(a) => self.expr(a, depth + 1),
                    None => Expr::other(Taints::NONE),
                };
                let negative = node
                    .child_by_field_name("operator")
                    .is_some_and(|op| self.text(op) == "-");
                match operand.value {
                    Value::Int(i) if negative => Expr::new(Value::Int(i.saturating_neg())),
                    _ => Expr::other(operand.taints),
                }
            }
            "parenthesized_expression" => match node.named_child(0) {
                Some(inner) if node.named_child_count() == 1 => self.expr(inner, depth + 1),
                _ => self.union_of_children(node, depth),
            },
            "list" | "tuple" | "set" | "expression_list" => self.sequence(node, depth),
            "dictionary" => self.dictionary(node, depth),
            "subscript" => self.subscript(node, depth),
            "list_comprehension" | "set_comprehension" | "generator_expression" | "dictionary_comprehension" => {
                self.comprehension(node, depth)
            }
            "conditional_expression" => self.conditional(node, depth),
            "keyword_argument" => match node.child_by_field_name("value") {
                Some(v) => self.expr(v, depth + 1),
                None => Expr::other(Taints::NONE),
            },
            "comment" => Expr::other(Taints::NONE),
            _ => self.union_of_children(node, depth),
        }
    }

    /// Anything without a value of its own: still visit it for the calls and labels inside.
    fn union_of_children(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let mut taints = Taints::NONE;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if is_statement(child.kind()) {
                self.visit(child, depth + 1);
            } else {
                taints = taints.union(self.expr(child, depth + 1).taints);
            }
        }
        Expr::other(taints)
    }

    fn string(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let (text, formatted, taints) = self.string_parts(node, depth);
        self.ctx.python.push_string(StringLit {
            text: text.clone(),
            formatted,
            span: self.span(node),
        });
        let value = if formatted {
            Value::Formatted(text)
        } else {
            Value::Str(text)
        };
        Expr {
            value,
            taints,
            trail: None,
        }
    }

    fn string_parts(&mut self, node: Node<'t>, depth: u32) -> (String, bool, Taints) {
        let mut raw = false;
        let mut text = String::new();
        let mut formatted = false;
        let mut taints = Taints::NONE;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "string_start" => raw = self.text(child).chars().any(|c| c == 'r' || c == 'R'),
                "string_content" => {
                    let content = self.text(child);
                    if raw {
                        text.push_str(content);
                    } else {
                        unescape_into(content, &mut text);
                    }
                }
                "interpolation" => {
                    formatted = true;
                    match child.child_by_field_name("expression") {
                        Some(e) => {
                            let value = self.expr(e, depth + 1);
                            taints = taints.union(value.taints);
                            // A hole whose value is known reads as that value (`f"/{user}/.ssh"`).
                            match &value.value {
                                Value::Str(s) | Value::Path(s) => text.push_str(s),
                                Value::Int(i) => text.push_str(&i.to_string()),
                                _ => text.push_str("{}"),
                            }
                        }
                        None => text.push_str("{}"),
                    }
                }
                _ => {}
            }
        }
        (text, formatted, taints)
    }

    fn concatenated_string(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let mut text = String::new();
        let mut formatted = false;
        let mut taints = Taints::NONE;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.kind() == "string" {
                let (t, f, l) = self.string_parts(child, depth + 1);
                text.push_str(&t);
                formatted |= f;
                taints = taints.union(l);
            }
        }
        self.ctx.python.push_string(StringLit {
            text: text.clone(),
            formatted,
            span: self.span(node),
        });
        let value = if formatted {
            Value::Formatted(text)
        } else {
            Value::Str(text)
        };
        Expr {
            value,
            taints,
            trail: None,
        }
    }

    fn identifier(&mut self, node: Node<'t>) -> Expr {
        let name = self.text(node);
        match self.names.get(name) {
            Some(Bound::Var(expr)) => expr.clone(),
            Some(Bound::Module(qualified)) => {
                let qualified = qualified.clone();
                self.name_reference(qualified, node, Taints::NONE)
            }
            None => Expr::new(Value::Name(name.to_string())),
        }
    }

    /// A reference used as a whole value: a name fact, and the labels of name sources
    /// (`os.environ` passed somewhere whole, not one variable of it).
    fn name_reference(&mut self, qualified: String, node: Node<'t>, taints: Taints) -> Expr {
        let labels = self.ctx.rules.name_labels(Language::Python, &qualified);
        if qualified.contains('.') {
            let span = self.span(node);
            self.ctx.python.push_name(NameRef {
                name: qualified.clone(),
                span,
            });
        }
        Expr {
            value: Value::Name(qualified),
            taints: taints.union(labels),
            trail: None,
        }
    }

    fn attribute(&mut self, node: Node<'t>, depth: u32) -> Expr {
        // `self.conn` assigned earlier is a variable by its dotted text.
        if let Some(Bound::Var(expr)) = self.names.get(self.text(node)) {
            return expr.clone();
        }
        let (qualified, object) = self.reference(node, depth);
        let taints = object.map_or(Taints::NONE, |o| o.taints);
        self.name_reference(qualified, node, taints)
    }

    /// The qualified name of an attribute and its evaluated object, without treating the
    /// attribute as used whole.
    fn reference(&mut self, node: Node<'t>, depth: u32) -> (String, Option<Expr>) {
        let attribute = node
            .child_by_field_name("attribute")
            .map(|a| self.text(a).to_string())
            .unwrap_or_default();
        let Some(object_node) = node.child_by_field_name("object") else {
            return (attribute, None);
        };
        let object = match object_node.kind() {
            // `os.path` inside `os.path.join`: resolve the chain without name facts for each link.
            "attribute" => match self.names.get(self.text(object_node)) {
                Some(Bound::Var(expr)) => expr.clone(),
                _ => {
                    let (q, inner) = self.reference(object_node, depth + 1);
                    Expr {
                        value: Value::Name(q),
                        taints: inner.map_or(Taints::NONE, |i| i.taints),
                        trail: None,
                    }
                }
            },
            "identifier" => match self.names.get(self.text(object_node)) {
                Some(Bound::Var(expr)) => expr.clone(),
                Some(Bound::Module(q)) => Expr::new(Value::Name(q.clone())),
                None => Expr::new(Value::Name(self.text(object_node).to_string())),
            },
            _ => self.expr(object_node, depth + 1),
        };
        (format!("{}.{attribute}", type_name(&object)), Some(object))
    }

    fn call(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let span = self.span(node);
        let (name, receiver) = match node.child_by_field_name("function") {
            Some(f) if f.kind() == "identifier" => {
                let name = match self.names.get(self.text(f)) {
                    Some(Bound::Module(q)) => q.clone(),
                    Some(Bound::Var(e)) => match &e.value {
                        Value::Name(q) => q.clone(),
                        _ => self.text(f).to_string(),
                    },
                    None => self.text(f).to_string(),
                };
                (name, None)
            }
            Some(f) if f.kind() == "attribute" => {
                let (name, object) = self.reference(f, depth + 1);
                (name, object)
            }
            Some(f) => {
                let callee = self.expr(f, depth + 1);
                (type_name(&callee), None)
            }
            None => (String::from("?"), None),
        };
        let mut call = Call::new(name, span);
        if let Some(r) = &receiver {
            call.taints = r.taints;
        }
        call.receiver = receiver;
        if let Some(arguments) = node.child_by_field_name("arguments") {
            if arguments.kind() == "generator_expression" {
                let arg = self.expr(arguments, depth + 1);
                call.taints = call.taints.union(arg.taints);
                call.args.push(arg);
            } else {
                let mut cursor = arguments.walk();
                for argument in arguments.named_children(&mut cursor) {
                    match argument.kind() {
                        "comment" => {}
                        "keyword_argument" => {
                            let Some(key) = argument.child_by_field_name("name") else {
                                continue;
                            };
                            let key = self.text(key).to_string();
                            let value = match argument.child_by_field_name("value") {
                                Some(v) => self.expr(v, depth + 1),
                                None => Expr::other(Taints::NONE),
                            };
                            call.taints = call.taints.union(value.taints);
                            self.ctx.python.push_binding(Binding {
                                kind: BindingKind::Kwarg,
                                target: key.clone(),
                                value: value.clone(),
                                span: self.span(argument),
                            });
                            call.kwargs.push((key, value));
                        }
                        _ => {
                            let value = self.expr(argument, depth + 1);
                            call.taints = call.taints.union(value.taints);
                            call.args.push(value);
                        }
                    }
                }
            }
        }
        self.mark_formatted_receiver(&call);
        let labels = self.ctx.rules.call_labels(Language::Python, &call);
        let mut result = self.call_result(&call, node).with_taints(call.taints.union(labels));
        if let Some(embedded) = self.ctx.rules.embedded(Language::Python, &call) {
            self.extract_embedded(embedded, span);
        }
        self.collect_into_receiver(node, &call);
        let mut found = self.ctx.rules.effects.python_effects(&call);
        found.extend(self.writes_to_opened_file(node, &call));
        let data = self.ctx.record_effects(Language::Python, found);
        result = result.with_taints(data);
        self.program.note_call(&call);
        let followed = self.follow_call(node, &call, depth);
        self.ctx.python.push_call(call);
        match followed {
            Some(returned) => returned.with_taints(result.taints),
            None => result,
        }
    }

    /// What a call evaluates to. Path builders and module loaders keep enough of their value for
    /// path and name rules to see through them; everything else is "the result of calling X".
    fn call_result(&mut self, call: &Call, node: Node<'t>) -> Expr {
        let first_text = || call.args.first().and_then(|a| a.text()).map(|t| t.into_owned());
        match call.name.as_str() {
            "os.path.join"
            | "posixpath.join"
            | "pathlib.Path"
            | "pathlib.PurePath"
            | "pathlib.PosixPath"
            | "pathlib.Path.joinpath"
            | "os.path.abspath"
            | "os.path.realpath"
            | "os.path.normpath"
            | "os.fspath"
            | "str" => {
                let mut parts: Vec<&Expr> = Vec::new();
                if call.name == "pathlib.Path.joinpath"
                    && let Some(r) = &call.receiver
                {
                    parts.push(r);
                }
                parts.extend(call.args.iter());
                let joined = join_path(&parts);
                if call.name.starts_with("pathlib.") {
                    as_path(joined)
                } else {
                    joined
                }
            }
            "os.path.expanduser" => match first_text() {
                Some(t) => Expr::new(Value::Str(t)),
                None => Expr::new(Value::Formatted("~".into())),
            },
            "pathlib.Path.expanduser" | "pathlib.Path.resolve" | "pathlib.Path.absolute" => match &call.receiver {
                Some(r) => as_path(r.clone()),
                None => Expr::new(Value::Call(call.name.clone())),
            },
            "pathlib.Path.home" => Expr::new(Value::Path("~".into())),
            "os.getenv" | "os.environ.get" => match first_text() {
                Some(var) => match self.outside_value("os.environ", &var) {
                    Some(known) => known,
                    // `os.environ.get("HOST", "203.0.113.7")`: the default is the value it can take.
                    None => match call.args.get(1).or_else(|| call.kwarg("default")) {
                        Some(default) if matches!(default.value, Value::Str(_)) => default.clone(),
                        _ => Expr::new(Value::Formatted(format!("${var}"))),
                    },
                },
                None => Expr::new(Value::Call(call.name.clone())),
            },
            "getattr" => match (call.args.first(), call.args.get(1).map(|a| &a.value)) {
                (Some(object), Some(Value::Str(attribute))) => {
                    Expr::new(Value::Name(format!("{}.{attribute}", type_name(object))))
                }
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            // A dynamic import of a literal module name is an import of that module.
            "__import__" | "importlib.import_module" | "importlib.__import__" => match first_text().or_else(|| {
                call.kwargs
                    .iter()
                    .find(|(name, _)| name == "name")
                    .and_then(|(_, value)| value.text())
                    .map(|t| t.into_owned())
            }) {
                Some(module) => {
                    self.record_import(module.clone(), node);
                    Expr::new(Value::Name(module))
                }
                None => Expr::new(Value::Call(call.name.clone())),
            },
            _ => Expr::new(Value::Call(call.name.clone())),
        }
    }

    /// `"SELECT ... {}".format(x)` builds a string: its literal counts as formatted.
    fn mark_formatted_receiver(&mut self, call: &Call) {
        if !call.name.ends_with(".format") || call.args.is_empty() && call.kwargs.is_empty() {
            return;
        }
        if let Some(Expr {
            value: Value::Str(text),
            ..
        }) = &call.receiver
        {
            self.mark_formatted(text.clone(), call.span);
        }
    }

    /// Marks the most recent string fact with this text as formatted.
    fn mark_formatted(&mut self, text: String, near: Span) {
        let strings = &mut self.ctx.python.strings;
        if let Some(lit) = strings
            .iter_mut()
            .rev()
            .take(64)
            .find(|s| s.text == text && s.span.line >= near.line.saturating_sub(50))
        {
            lit.formatted = true;
        }
    }

    fn extract_embedded(&mut self, embedded: Embedded, span: Span) {
        match embedded {
            Embedded::Source(language, code) => self.ctx.extract_embedded(language, &code, span),
            Embedded::Argv(argv) => crate::shell::command_from_argv(self.ctx, argv, span),
        }
    }

    fn assignment(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let value = match node.child_by_field_name("right") {
            Some(right) => {
                let value = self.expr(right, depth + 1);
                self.starting_at(value, right)
            }
            None => return Expr::other(Taints::NONE),
        };
        if let Some(left) = node.child_by_field_name("left") {
            self.bind_target(left, value.clone(), depth + 1);
        }
        value
    }

    fn augmented_assignment(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let addition = match node.child_by_field_name("right") {
            Some(right) => self.expr(right, depth + 1),
            None => return Expr::other(Taints::NONE),
        };
        let Some(left) = node.child_by_field_name("left") else {
            return addition;
        };
        let previous = self.expr(left, depth + 1);
        let combined = match (&previous.value, &addition.value) {
            (Value::Str(a), Value::Str(b)) => Value::Str(format!("{a}{b}")),
            (Value::Str(a) | Value::Formatted(a), _) => {
                Value::Formatted(format!("{a}{}", addition.text().unwrap_or("{}".into())))
            }
            _ => Value::Other,
        };
        let value = Expr {
            value: combined,
            taints: previous.taints.union(addition.taints),
            trail: None,
        };
        if left.kind() == "identifier" {
            self.names
                .insert(self.text(left).to_string(), Bound::Var(value.clone()));
        }
        value
    }

    fn binary_operator(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let (Some(left_node), Some(right_node)) = (node.child_by_field_name("left"), node.child_by_field_name("right"))
        else {
            return self.union_of_children(node, depth);
        };
        let left = self.expr(left_node, depth + 1);
        let right = self.expr(right_node, depth + 1);
        let taints = left.taints.union(right.taints);
        let operator = node
            .child_by_field_name("operator")
            .map(|o| self.text(o))
            .unwrap_or_default();
        let value = match (operator, &left.value, &right.value) {
            ("+", Value::Str(a), Value::Str(b)) => Value::Str(format!("{a}{b}")),
            ("+", Value::Str(a) | Value::Formatted(a), _) => {
                if let Value::Str(a) = &left.value {
                    self.mark_formatted(a.clone(), self.span(node));
                }
                Value::Formatted(format!("{a}{{}}"))
            }
            ("+", _, Value::Str(b) | Value::Formatted(b)) => {
                if let Value::Str(b) = &right.value {
                    self.mark_formatted(b.clone(), self.span(node));
                }
                Value::Formatted(format!("{{}}{b}"))
            }
            ("%", Value::Str(a) | Value::Formatted(a), _) => {
                if let Value::Str(a) = &left.value
                    && !right.is_literal()
                {
                    self.mark_formatted(a.clone(), self.span(node));
                }
                Value::Formatted(a.clone())
            }
            ("/", Value::Path(_), _) => return as_path(join_path(&[&left, &right])),
            ("+", Value::Seq(a), Value::Seq(b)) => {
                let mut items = a.clone();
                items.extend(b.iter().cloned());
                Value::Seq(items)
            }
            ("|", Value::Int(a), Value::Int(b)) => Value::Int(a | b),
            // `stat.S_ISUID | 0o755`: the flag's name is what rules look for.
            ("|", Value::Name(n), _) | ("|", _, Value::Name(n)) => Value::Name(n.clone()),
            ("/", Value::Str(_) | Value::Formatted(_), _) => return join_path(&[&left, &right]),
            _ => Value::Other,
        };
        Expr {
            value,
            taints,
            trail: None,
        }
    }

    fn comparison(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let mut cursor = node.walk();
        let operands: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        let mut taints = Taints::NONE;
        let mut values = Vec::with_capacity(operands.len());
        for operand in &operands {
            let value = self.expr(*operand, depth + 1);
            taints = taints.union(value.taints);
            values.push(value);
        }
        // `password == "hunter2"` hard-codes the secret as surely as an assignment does.
        if let [a, b] = operands.as_slice() {
            for (target, literal) in [(a, &values[1]), (b, &values[0])] {
                if matches!(target.kind(), "identifier" | "attribute") && matches!(literal.value, Value::Str(_)) {
                    let binding = Binding {
                        kind: BindingKind::Compare,
                        target: self.text(*target).to_string(),
                        value: literal.clone(),
                        span: self.span(node),
                    };
                    self.ctx.python.push_binding(binding);
                }
            }
        }
        Expr::other(taints)
    }

    fn sequence(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let mut items = Vec::new();
        let mut taints = Taints::NONE;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.kind() == "comment" {
                continue;
            }
            let item = self.expr(child, depth + 1);
            taints = taints.union(item.taints);
            if items.len() < MAX_SEQ_VALUES {
                items.push(item);
            }
        }
        Expr {
            value: Value::Seq(items),
            taints,
            trail: None,
        }
    }

    /// A dict display evaluates to the sequence of its values, so "all literal" and "some value
    /// is tainted" read the same as for a list.
    fn dictionary(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let mut values = Vec::new();
        let mut taints = Taints::NONE;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.kind() != "pair" {
                taints = taints.union(self.expr(child, depth + 1).taints);
                continue;
            }
            let (Some(key), Some(value)) = (child.child_by_field_name("key"), child.child_by_field_name("value"))
            else {
                continue;
            };
            let key_value = self.expr(key, depth + 1);
            let value = self.expr(value, depth + 1);
            taints = taints.union(key_value.taints).union(value.taints);
            if values.len() < MAX_SEQ_VALUES {
                values.push(value.clone());
            }
            if let Value::Str(target) = key_value.value {
                let binding = Binding {
                    kind: BindingKind::DictEntry,
                    target,
                    value,
                    span: self.span(child),
                };
                self.ctx.python.push_binding(binding);
            }
        }
        Expr {
            value: Value::Seq(values),
            taints,
            trail: None,
        }
    }

    fn subscript(&mut self, node: Node<'t>, depth: u32) -> Expr {
        let Some(object_node) = node.child_by_field_name("value") else {
            return self.union_of_children(node, depth);
        };
        let object = match object_node.kind() {
            "attribute" => match self.names.get(self.text(object_node)) {
                Some(Bound::Var(e)) => e.clone(),
                _ => {
                    let (q, inner) = self.reference(object_node, depth + 1);
                    Expr {
                        value: Value::Name(q),
                        taints: inner.map_or(Taints::NONE, |i| i.taints),
                        trail: None,
                    }
                }
            },
            "identifier" => match self.names.get(self.text(object_node)) {
                Some(Bound::Module(q)) => Expr::new(Value::Name(q.clone())),
                _ => self.expr(object_node, depth + 1),
            },
            _ => self.expr(object_node, depth + 1),
        };
        let mut taints = object.taints;
        let mut key = None;
        let mut cursor = node.walk();
        for index in node.children_by_field_name("subscript", &mut cursor) {
            let value = self.expr(index, depth + 1);
            taints = taints.union(value.taints);
            key.get_or_insert(value);
        }
        // `os.environ["KEY"]` reads one item of a module-level mapping: model it as a call to
        // `__getitem__`, so sources and rules can name it.
        if let (Value::Name(q), Some(key)) = (&object.value, key)
            && q.contains('.')
        {
            let mut call = Call::new(format!("{q}.__getitem__"), self.span(node));
            call.taints = taints;
            let key_text = key.text().map(|t| t.into_owned());
            call.args.push(key);
            let labels = self.ctx.rules.call_labels(Language::Python, &call);
            self.ctx.python.push_call(call);
            if let Some(known) = key_text.as_deref().and_then(|k| self.outside_value(q, k)) {
                return known.with_taints(taints.union(labels));
            }
            let value = match key_text {
                Some(k) if q == "os.environ" => Value::Formatted(format!("${k}")),
                Some(k) if q == "sys.argv" => Value::Formatted(format!("{{sys.argv[{k}]}}")),
                _ => Value::Other,
            };
            return Expr {
                value,
                taints: taints.union(labels),
                trail: None,
            };
        }
        Expr::other(taints)
    }

    fn comprehension(&mut self, node: Node<'t>, depth: u32) -> Expr {
        // Clauses bind the loop variables the body uses, so they go first.
        let mut taints = Taints::NONE;
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        for clause in children.iter().filter(|c| c.kind() == "for_in_clause") {
            let iterated = match clause.child_by_field_name("right") {
                Some(right) => self.expr(right, depth + 1),
                None => Expr::other(Taints::NONE),
            };
            taints = taints.union(iterated.taints);
            if let Some(left) = clause.child_by_field_name("left") {
                self.bind_target(left, Expr::other(iterated.taints), depth + 1);
            }
        }
        for child in children.iter().filter(|c| c.kind() != "for_in_clause") {
            taints = taints.union(self.expr(*child, depth + 1).taints);
        }
        Expr::other(taints)
    }
}

fn is_statement(kind: &str) -> bool {
    kind.ends_with("_statement")
        || matches!(
            kind,
            "block" | "function_definition" | "class_definition" | "decorated_definition"
        )
}

/// The qualified name an expression gives to attributes looked up on it.
fn type_name(expr: &Expr) -> String {
    match &expr.value {
        Value::Name(q) | Value::Call(q) => q.clone(),
        Value::Path(_) => "pathlib.Path".into(),
        Value::Str(_) | Value::Formatted(_) => "str".into(),
        Value::Int(_) => "int".into(),
        Value::Float(_) => "float".into(),
        Value::Bool(_) => "bool".into(),
        Value::None => "None".into(),
        Value::Seq(_) => "list".into(),
        Value::Other => "?".into(),
    }
}

/// `os.path.join("~", ".ssh", "id_rsa")` as the path text `~/.ssh/id_rsa`.
fn join_path(parts: &[&Expr]) -> Expr {
    let mut text = String::new();
    let mut literal = true;
    let mut taints = Taints::NONE;
    for part in parts {
        taints = taints.union(part.taints);
        let piece = match &part.value {
            Value::Str(s) | Value::Path(s) => s.clone(),
            Value::Formatted(s) => {
                literal = false;
                s.clone()
            }
            _ => {
                literal = false;
                "{}".to_string()
            }
        };
        if piece.starts_with('/') {
            text = piece;
        } else {
            if !text.is_empty() && !text.ends_with('/') {
                text.push('/');
            }
            text.push_str(&piece);
        }
    }
    let value = if literal {
        Value::Str(text)
    } else {
        Value::Formatted(text)
    };
    Expr {
        value,
        taints,
        trail: None,
    }
}

/// A joined path's value, typed as a pathlib path when it is a literal.
fn as_path(expr: Expr) -> Expr {
    match expr.value {
        Value::Str(s) => Expr {
            value: Value::Path(s),
            taints: expr.taints,
            trail: None,
        },
        _ => expr,
    }
}

fn parse_int(text: &str) -> Option<i64> {
    let cleaned: String = text.chars().filter(|c| *c != '_').collect();
    let lower = cleaned.to_ascii_lowercase();
    let lower = lower.trim_end_matches('l');
    if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else if let Some(oct) = lower.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()
    } else if let Some(bin) = lower.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()
    } else if lower.len() > 1 && lower.starts_with('0') {
        // Python 2 octal (`0777`), still common in chmod calls.
        i64::from_str_radix(&lower[1..], 8).ok()
    } else {
        lower.parse().ok()
    }
}

/// Decodes the escapes that matter for reading paths and commands hidden in strings
/// (`"\x2fetc\x2fshadow"`); anything unusual is kept as written.
fn unescape_into(content: &str, out: &mut String) {
    let mut chars = content.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('\n') => {}
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(decoded) => out.push(decoded),
                    None => {
                        out.push_str("\\x");
                        out.push_str(&hex);
                    }
                }
            }
            Some(u @ ('u' | 'U')) => {
                let width = if u == 'u' { 4 } else { 8 };
                let hex: String = chars.by_ref().take(width).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(decoded) => out.push(decoded),
                    None => {
                        out.push('\\');
                        out.push(u);
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_in_every_base() {
        assert_eq!(parse_int("0o755"), Some(0o755));
        assert_eq!(parse_int("0777"), Some(0o777));
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_int("1_024"), Some(1024));
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("99999999999999999999999"), None);
    }

    #[test]
    fn escapes_are_decoded() {
        let mut out = String::new();
        unescape_into(r"\x2fetc\x2fshadow\n\u0041\q", &mut out);
        assert_eq!(out, "/etc/shadow\nA\\q");
    }
}
