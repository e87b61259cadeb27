//! Python expressions to values: literals and strings (escapes already decoded by the parser),
//! names resolved through imports and assignments, operators that build strings and paths,
//! containers, subscripts such as `os.environ["KEY"]` and `sys.argv[1]`.

use super::walker::{Bound, Walker};
use crate::budget::with_stack;
use crate::facts::{Binding, BindingKind, Call, Expr, NameRef, StringLit, Taints, Value};
use airlock_protocol::request::Language;
use ruff_python_ast::{self as ast, Number, Operator, UnaryOp};
use ruff_text_size::{Ranged, TextRange};

/// Sequence displays keep this many elements as values; the rest still yield facts and labels.
const MAX_SEQ_VALUES: usize = 256;

impl<'t> Walker<'_, '_, '_, 't> {
    pub(super) fn expr(&mut self, node: &'t ast::Expr, depth: u32) -> Expr {
        with_stack(|| self.expr_node(node, depth))
    }

    fn expr_node(&mut self, node: &'t ast::Expr, depth: u32) -> Expr {
        if self.stop_at(node, depth) {
            return Expr::other(Taints::NONE);
        }
        let inner = depth + 1;
        match node {
            ast::Expr::StringLiteral(s) => self.literal(s.value.to_str().to_string(), node),
            ast::Expr::BytesLiteral(b) => {
                let bytes: Vec<u8> = b.value.bytes().collect();
                self.literal(String::from_utf8_lossy(&bytes).into_owned(), node)
            }
            ast::Expr::FString(f) => {
                let parts = f.value.iter().map(|part| match part {
                    ast::FStringPart::Literal(literal) => Piece::Text(&literal.value),
                    ast::FStringPart::FString(f) => Piece::Elements(&f.elements),
                });
                self.formatted_string(parts, node, inner)
            }
            ast::Expr::TString(t) => {
                let parts = t.value.iter().map(|t| Piece::Elements(&t.elements));
                self.formatted_string(parts, node, inner)
            }
            ast::Expr::NumberLiteral(n) => Expr::new(match &n.value {
                Number::Int(i) => i.as_i64().map_or(Value::Other, Value::Int),
                Number::Float(f) => Value::Float(*f),
                Number::Complex { .. } => Value::Other,
            }),
            ast::Expr::BooleanLiteral(b) => Expr::new(Value::Bool(b.value)),
            ast::Expr::NoneLiteral(_) => Expr::new(Value::None),
            ast::Expr::EllipsisLiteral(_) | ast::Expr::IpyEscapeCommand(_) => Expr::other(Taints::NONE),
            ast::Expr::Name(name) => self.identifier(name),
            ast::Expr::Attribute(attribute) => self.attribute(attribute, inner),
            ast::Expr::Call(call) => self.call(call, inner),
            ast::Expr::Named(named) => {
                let value = self.expr(&named.value, inner);
                self.bind_target(&named.target, value.clone(), inner);
                value
            }
            ast::Expr::BinOp(b) => self.binary_operator(b, inner),
            ast::Expr::Compare(c) => self.comparison(c, inner),
            ast::Expr::UnaryOp(u) => {
                let operand = self.expr(&u.operand, inner);
                match operand.value {
                    Value::Int(i) if u.op == UnaryOp::USub => Expr::new(Value::Int(i.saturating_neg())),
                    _ => Expr::other(operand.taints),
                }
            }
            ast::Expr::BoolOp(b) => self.union_of(&b.values, inner),
            ast::Expr::List(ast::ExprList { elts, .. })
            | ast::Expr::Tuple(ast::ExprTuple { elts, .. })
            | ast::Expr::Set(ast::ExprSet { elts, .. }) => self.sequence(elts, inner),
            ast::Expr::Dict(d) => self.dictionary(d, inner),
            ast::Expr::Subscript(s) => self.subscript(s, inner),
            ast::Expr::ListComp(c) => self.comprehension(&c.generators, [Some(&*c.elt), None], inner),
            ast::Expr::SetComp(c) => self.comprehension(&c.generators, [Some(&*c.elt), None], inner),
            ast::Expr::Generator(c) => self.comprehension(&c.generators, [Some(&*c.elt), None], inner),
            ast::Expr::DictComp(c) => self.comprehension(&c.generators, [c.key.as_deref(), Some(&*c.value)], inner),
            ast::Expr::If(conditional) => self.conditional(conditional, inner),
            ast::Expr::Lambda(lambda) => {
                let mut taints = Taints::NONE;
                if let Some(parameters) = &lambda.parameters {
                    for parameter in parameters.iter_non_variadic_params() {
                        if let Some(default) = &parameter.default {
                            taints = taints.union(self.expr(default, inner).taints);
                        }
                    }
                }
                Expr::other(taints.union(self.expr(&lambda.body, inner).taints))
            }
            ast::Expr::Await(ast::ExprAwait { value, .. })
            | ast::Expr::YieldFrom(ast::ExprYieldFrom { value, .. })
            | ast::Expr::Starred(ast::ExprStarred { value, .. }) => Expr::other(self.expr(value, inner).taints),
            ast::Expr::Yield(y) => match &y.value {
                Some(value) => Expr::other(self.expr(value, inner).taints),
                None => Expr::other(Taints::NONE),
            },
            ast::Expr::Slice(s) => {
                let parts: Vec<&'t ast::Expr> = [&s.lower, &s.upper, &s.step]
                    .into_iter()
                    .flatten()
                    .map(|b| &**b)
                    .collect();
                let mut taints = Taints::NONE;
                for part in parts {
                    taints = taints.union(self.expr(part, inner).taints);
                }
                Expr::other(taints)
            }
        }
    }

    /// Anything without a value of its own: still visit it for the calls and labels inside.
    pub(super) fn union_of(&mut self, nodes: &'t [ast::Expr], depth: u32) -> Expr {
        let mut taints = Taints::NONE;
        for node in nodes {
            taints = taints.union(self.expr(node, depth).taints);
        }
        Expr::other(taints)
    }

    /// A plain string (implicitly concatenated parts included): a string fact and its value.
    fn literal(&mut self, text: String, node: &ast::Expr) -> Expr {
        self.ctx.python.push_string(StringLit {
            text: text.clone(),
            formatted: false,
            span: self.span(node),
        });
        Expr::new(Value::Str(text))
    }

    /// An f-string (or t-string), with the literal parts it is concatenated with: holes whose
    /// value is known read as that value (`f"/{user}/.ssh"`), the others as `{}`.
    fn formatted_string<'p>(&mut self, parts: impl Iterator<Item = Piece<'p, 't>>, node: &ast::Expr, depth: u32) -> Expr
    where
        't: 'p,
    {
        let mut text = String::new();
        let mut formatted = false;
        let mut taints = Taints::NONE;
        for part in parts {
            let elements = match part {
                Piece::Text(literal) => {
                    text.push_str(literal);
                    continue;
                }
                Piece::Elements(elements) => elements,
            };
            for element in elements {
                match element {
                    ast::InterpolatedStringElement::Literal(literal) => text.push_str(&literal.value),
                    ast::InterpolatedStringElement::Interpolation(hole) => {
                        formatted = true;
                        let value = self.expr(&hole.expression, depth);
                        taints = taints.union(value.taints);
                        match &value.value {
                            Value::Str(s) | Value::Path(s) => text.push_str(s),
                            Value::Int(i) => text.push_str(&i.to_string()),
                            _ => text.push_str("{}"),
                        }
                    }
                }
            }
        }
        self.ctx.python.push_string(StringLit {
            text: text.clone(),
            formatted,
            span: self.span(node),
        });
        Expr::built(text, !formatted, taints)
    }

    pub(super) fn identifier(&mut self, node: &'t ast::ExprName) -> Expr {
        let name = node.id.as_str();
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
    pub(super) fn name_reference(&mut self, qualified: String, node: &impl Ranged, taints: Taints) -> Expr {
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

    fn attribute(&mut self, node: &'t ast::ExprAttribute, depth: u32) -> Expr {
        // `self.conn` assigned earlier is a variable by its dotted text.
        if let Some(Bound::Var(expr)) = self.names.get(self.text(node)) {
            return expr.clone();
        }
        let (qualified, object) = self.reference(node, depth);
        self.name_reference(qualified, node, object.taints)
    }

    /// The qualified name of an attribute and its evaluated object, without treating the
    /// attribute as used whole.
    pub(super) fn reference(&mut self, node: &'t ast::ExprAttribute, depth: u32) -> (String, Expr) {
        let object = self.object(&node.value, depth);
        (format!("{}.{}", type_name(&object), node.attr.as_str()), object)
    }

    /// What an attribute or subscript is taken of: a variable by its dotted text, a module by
    /// its qualified name, or the evaluated expression.
    pub(super) fn object(&mut self, node: &'t ast::Expr, depth: u32) -> Expr {
        match node {
            // `os.path` inside `os.path.join`: resolve the chain without name facts for each link.
            ast::Expr::Attribute(inner) => match self.names.get(self.text(node)) {
                Some(Bound::Var(expr)) => expr.clone(),
                _ => {
                    let (q, inner) = self.reference(inner, depth + 1);
                    Expr {
                        value: Value::Name(q),
                        taints: inner.taints,
                        trail: None,
                    }
                }
            },
            ast::Expr::Name(name) => match self.names.get(name.id.as_str()) {
                Some(Bound::Var(expr)) => expr.clone(),
                Some(Bound::Module(q)) => Expr::new(Value::Name(q.clone())),
                None => Expr::new(Value::Name(name.id.to_string())),
            },
            _ => self.expr(node, depth + 1),
        }
    }

    fn binary_operator(&mut self, node: &'t ast::ExprBinOp, depth: u32) -> Expr {
        let left = self.expr(&node.left, depth);
        let right = self.expr(&node.right, depth);
        let taints = left.taints.union(right.taints);
        let value = match (node.op, &left.value, &right.value) {
            (Operator::Add, Value::Str(a), Value::Str(b)) => Value::Str(format!("{a}{b}")),
            (Operator::Add, Value::Str(a) | Value::Formatted(a), _) => {
                if let Value::Str(a) = &left.value {
                    self.mark_formatted(a.clone(), self.span(node));
                }
                Value::Formatted(format!("{a}{{}}"))
            }
            (Operator::Add, _, Value::Str(b) | Value::Formatted(b)) => {
                if let Value::Str(b) = &right.value {
                    self.mark_formatted(b.clone(), self.span(node));
                }
                Value::Formatted(format!("{{}}{b}"))
            }
            (Operator::Mod, Value::Str(a) | Value::Formatted(a), _) => {
                if let Value::Str(a) = &left.value
                    && !right.is_literal()
                {
                    self.mark_formatted(a.clone(), self.span(node));
                }
                Value::Formatted(a.clone())
            }
            (Operator::Div, Value::Path(_), _) => return as_path(join_path(&[&left, &right])),
            (Operator::Add, Value::Seq(a), Value::Seq(b)) => {
                let mut items = a.clone();
                items.extend(b.iter().cloned());
                Value::Seq(items)
            }
            // `["pytest", "-q"] + sys.argv[1:]`: a known list followed by values known at run time
            // (one item stands for them); the program it names is still the first.
            (Operator::Add, Value::Seq(a), Value::Name(_) | Value::Call(_) | Value::Other) if !a.is_empty() => {
                let mut items = a.clone();
                items.push(right.clone());
                Value::Seq(items)
            }
            (Operator::BitOr, Value::Int(a), Value::Int(b)) => Value::Int(a | b),
            // `stat.S_ISUID | 0o755`: the flag's name is what rules look for.
            (Operator::BitOr, Value::Name(n), _) | (Operator::BitOr, _, Value::Name(n)) => Value::Name(n.clone()),
            (Operator::Div, Value::Str(_) | Value::Formatted(_), _) => return join_path(&[&left, &right]),
            _ => Value::Other,
        };
        Expr {
            value,
            taints,
            trail: None,
        }
    }

    fn comparison(&mut self, node: &'t ast::ExprCompare, depth: u32) -> Expr {
        let operands: Vec<&'t ast::Expr> = std::iter::once(&*node.left).chain(node.comparators.iter()).collect();
        let mut taints = Taints::NONE;
        let mut values = Vec::with_capacity(operands.len());
        for operand in &operands {
            let value = self.expr(operand, depth);
            taints = taints.union(value.taints);
            values.push(value);
        }
        // `password == "hunter2"` hard-codes the secret as surely as an assignment does.
        if let ([a, b], [value_a, value_b]) = (operands.as_slice(), values.as_slice()) {
            for (target, literal) in [(a, value_b), (b, value_a)] {
                if matches!(target, ast::Expr::Name(_) | ast::Expr::Attribute(_))
                    && matches!(literal.value, Value::Str(_))
                {
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

    fn sequence(&mut self, elements: &'t [ast::Expr], depth: u32) -> Expr {
        let mut items = Vec::new();
        let mut taints = Taints::NONE;
        for element in elements {
            // `[tool, *paths]`: a known sequence spread into the display is its elements.
            if let ast::Expr::Starred(starred) = element {
                let spread = self.expr(&starred.value, depth);
                taints = taints.union(spread.taints);
                match spread.value {
                    Value::Seq(inner) => {
                        items.extend(inner.into_iter().take(MAX_SEQ_VALUES.saturating_sub(items.len())))
                    }
                    _ => items.push(Expr::other(spread.taints)),
                }
                continue;
            }
            let item = self.expr(element, depth);
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
    fn dictionary(&mut self, node: &'t ast::ExprDict, depth: u32) -> Expr {
        let mut values = Vec::new();
        let mut taints = Taints::NONE;
        for item in &node.items {
            let Some(key) = &item.key else {
                // `**other`
                taints = taints.union(self.expr(&item.value, depth).taints);
                continue;
            };
            let key_value = self.expr(key, depth);
            let value = self.expr(&item.value, depth);
            taints = taints.union(key_value.taints).union(value.taints);
            if values.len() < MAX_SEQ_VALUES {
                values.push(value.clone());
            }
            if let Value::Str(target) = key_value.value {
                let binding = Binding {
                    kind: BindingKind::DictEntry,
                    target,
                    value,
                    span: self.span_of(TextRange::new(key.start(), item.value.end())),
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

    fn subscript(&mut self, node: &'t ast::ExprSubscript, depth: u32) -> Expr {
        /// Namespaces whose items are looked up by name to hide a call.
        const NAMESPACES: &[&str] = &[
            "builtins",
            "globals",
            "os",
            "posix",
            "nt",
            "subprocess",
            "sys",
            "importlib",
            "pty",
            "ctypes",
            "socket",
            "shutil",
            "commands",
        ];
        let object = match &*node.value {
            ast::Expr::Name(name) => match self.names.get(name.id.as_str()) {
                Some(Bound::Module(q)) => Expr::new(Value::Name(q.clone())),
                _ => self.expr(&node.value, depth),
            },
            ast::Expr::Attribute(_) => self.object(&node.value, depth.saturating_sub(1)),
            _ => self.expr(&node.value, depth),
        };
        let mut taints = object.taints;
        // `a[1, 2]` has two indices, `a[(1, 2)]` one.
        let indices: &'t [ast::Expr] = match &*node.slice {
            ast::Expr::Tuple(tuple) if !tuple.parenthesized => &tuple.elts,
            slice => std::slice::from_ref(slice),
        };
        let mut key = None;
        for index in indices {
            let value = self.expr(index, depth);
            taints = taints.union(value.taints);
            key.get_or_insert(value);
        }
        // `"metsys"[::-1]` reverses a string.
        if let (Value::Str(text), ast::Expr::Slice(slice)) = (&object.value, &*node.slice)
            && slice.lower.is_none()
            && slice.upper.is_none()
            && slice
                .step
                .as_deref()
                .is_some_and(|s| self.text(s).replace(' ', "") == "-1")
        {
            return Expr::new(Value::Str(text.chars().rev().collect())).with_taints(taints);
        }
        // A namespace's item (`vars(os)["system"]`, `globals()["__builtins__"]["eval"]`,
        // `__builtins__["exec"]`) is the module member of that name.
        if let (Value::Name(q), Some(Value::Str(member))) = (&object.value, key.as_ref().map(|k| &k.value)) {
            let space = namespace(q);
            if NAMESPACES.contains(&space.as_str()) {
                let resolved = match (space.as_str(), member.as_str()) {
                    ("globals", "__builtins__") => "builtins".to_string(),
                    ("globals", name) => name.to_string(),
                    (space, name) => format!("{space}.{name}"),
                };
                self.resolved(&resolved, Some(&node.slice), self.span(node));
                return Expr::new(Value::Name(resolved)).with_taints(taints);
            }
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

    /// A comprehension: its clauses bind the loop variables the body uses, so they go first.
    fn comprehension(
        &mut self,
        generators: &'t [ast::Comprehension],
        body: [Option<&'t ast::Expr>; 2],
        depth: u32,
    ) -> Expr {
        // `[open(p).read() for p in ("/etc/hosts", "/etc/resolv.conf")]`: over a literal sequence
        // (up to 8 items), the element is evaluated once per item, as a `for` loop's body is.
        if let [generator] = generators
            && generator.ifs.is_empty()
            && matches!(generator.target, ast::Expr::Name(_))
            && let [Some(element), None] = body
        {
            let iterated = self.expr(&generator.iter, depth);
            if let Value::Seq(items) = &iterated.value
                && !items.is_empty()
                && items.len() <= 8
            {
                let mut taints = iterated.taints;
                let mut values = Vec::with_capacity(items.len());
                for item in items.clone() {
                    self.bind_target(&generator.target, item, depth);
                    let value = self.expr(element, depth);
                    taints = taints.union(value.taints);
                    values.push(value);
                }
                return Expr::new(Value::Seq(values)).with_taints(taints);
            }
            self.bind_target(&generator.target, Expr::other(iterated.taints), depth);
            let value = self.expr(element, depth);
            return Expr::other(iterated.taints.union(value.taints));
        }
        let mut taints = Taints::NONE;
        for generator in generators {
            let iterated = self.expr(&generator.iter, depth);
            taints = taints.union(iterated.taints);
            self.bind_target(&generator.target, Expr::other(iterated.taints), depth);
        }
        for condition in generators.iter().flat_map(|g| g.ifs.iter()) {
            taints = taints.union(self.expr(condition, depth).taints);
        }
        for part in body.into_iter().flatten() {
            taints = taints.union(self.expr(part, depth).taints);
        }
        Expr::other(taints)
    }
}

/// A part of an f-string expression: a plain string it is concatenated with, or the elements of
/// one f-string (or t-string).
enum Piece<'p, 't> {
    Text(&'p str),
    Elements(&'t ast::InterpolatedStringElements),
}

/// The qualified name an expression gives to attributes looked up on it.
pub(super) fn type_name(expr: &Expr) -> String {
    match &expr.value {
        Value::Name(q) => q.clone(),
        Value::Call(q) => constructed(q).to_string(),
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

/// What a call made: an alternate constructor (`paramiko.SFTPClient.from_transport(t)`,
/// `Image.frombytes`, `datetime.fromtimestamp`: a class's method named `from...`) makes an
/// instance of its class, whose methods are then the class's.
fn constructed(callee: &str) -> &str {
    match callee.rsplit_once('.') {
        Some((class, method))
            if method.starts_with("from")
                && class
                    .rsplit('.')
                    .next()
                    .is_some_and(|c| c.starts_with(|ch: char| ch.is_ascii_uppercase())) =>
        {
            class
        }
        _ => callee,
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
    Expr::built(text, literal, taints)
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

/// The namespace an object's name stands for: `__builtins__`, `builtins.__dict__` and the file's
/// globals' `__builtins__` are the built-ins; `os.__dict__` is `os`.
pub(super) fn namespace(name: &str) -> String {
    let name = name.strip_suffix(".__dict__").unwrap_or(name);
    match name {
        "__builtins__" | "globals.__builtins__" => "builtins".into(),
        other => other.to_string(),
    }
}
