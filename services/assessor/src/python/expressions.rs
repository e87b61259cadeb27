//! Python expressions to values: literals and strings (with escapes decoded), names resolved
//! through imports and assignments, operators that build strings and paths, containers,
//! subscripts such as `os.environ["KEY"]` and `sys.argv[1]`.

use super::{Bound, MAX_SEQ_VALUES, Walker};
use crate::extract::with_stack;
use crate::facts::{Binding, BindingKind, Call, Expr, NameRef, StringLit, Taints, Value};
use airlock_protocol::request::Language;
use tree_sitter::Node;

impl<'t> Walker<'_, '_, '_, 't> {
    pub(super) fn expr(&mut self, node: Node<'t>, depth: u32) -> Expr {
        with_stack(|| self.expr_node(node, depth))
    }

    pub(super) fn expr_node(&mut self, node: Node<'t>, depth: u32) -> Expr {
        if self.ctx.stop_at(depth) {
            return Expr::other(Taints::NONE);
        }
        self.ctx.reached(node.start_position().row as u32 + 1, self.outer);
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
    pub(super) fn union_of_children(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn string(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn string_parts(&mut self, node: Node<'t>, depth: u32) -> (String, bool, Taints) {
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

    pub(super) fn concatenated_string(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn identifier(&mut self, node: Node<'t>) -> Expr {
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
    pub(super) fn name_reference(&mut self, qualified: String, node: Node<'t>, taints: Taints) -> Expr {
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

    pub(super) fn attribute(&mut self, node: Node<'t>, depth: u32) -> Expr {
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
    pub(super) fn reference(&mut self, node: Node<'t>, depth: u32) -> (String, Option<Expr>) {
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

    pub(super) fn assignment(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn augmented_assignment(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn binary_operator(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn comparison(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn sequence(&mut self, node: Node<'t>, depth: u32) -> Expr {
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
    pub(super) fn dictionary(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn subscript(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

    pub(super) fn comprehension(&mut self, node: Node<'t>, depth: u32) -> Expr {
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

pub(super) fn is_statement(kind: &str) -> bool {
    kind.ends_with("_statement")
        || matches!(
            kind,
            "block" | "function_definition" | "class_definition" | "decorated_definition"
        )
}

/// The qualified name an expression gives to attributes looked up on it.
pub(super) fn type_name(expr: &Expr) -> String {
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
pub(super) fn join_path(parts: &[&Expr]) -> Expr {
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
pub(super) fn as_path(expr: Expr) -> Expr {
    match expr.value {
        Value::Str(s) => Expr {
            value: Value::Path(s),
            taints: expr.taints,
            trail: None,
        },
        _ => expr,
    }
}

pub(super) fn parse_int(text: &str) -> Option<i64> {
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
pub(super) fn unescape_into(content: &str, out: &mut String) {
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
