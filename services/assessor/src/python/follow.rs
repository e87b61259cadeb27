//! Following values through a Python program: calls of the file's own functions and methods
//! (arguments bound to parameters, keyword and default arguments included, each call site on
//! its own), return values, loops over literal lists and directory listings, files opened and
//! then written, and the request's arguments and environment as the values of `sys.argv` and
//! `os.environ`.

use super::walker::{Bound, Walker};
use crate::effects::Found;
use crate::facts::{Call, Expr, Taints, Value};
use ruff_python_ast as ast;

/// Calls followed into a function's body per program, and how deep.
const MAX_FOLLOWED_CALLS: usize = 64;
const MAX_CALL_DEPTH: usize = 4;
impl<'t> Walker<'_, '_, '_, 't> {
    /// Records a `def` and walks its body once with its parameters unknown, keeping what it
    /// returns then as the value of calls that bind nothing.
    pub(super) fn define_function(&mut self, node: &'t ast::StmtFunctionDef, depth: u32) {
        let name = node.name.as_str().to_string();
        match &self.program.current_class {
            Some(class) if self.program.calling.is_empty() => {
                self.program.methods.insert(format!("{class}.{name}"), node);
                self.program.methods.entry(name.clone()).or_insert(node);
            }
            Some(_) => {}
            None => {
                self.program.functions.insert(name.clone(), node);
                // A local function shadows a module member of the same name.
                self.names.remove(&name);
            }
        }
        self.program.returns.push(None);
        self.suite(&node.body, depth + 1);
        if let Some(Some(returned)) = self.program.returns.pop()
            && self.program.current_class.is_none()
        {
            self.program.summaries.insert(name, returned);
        }
    }

    pub(super) fn class_definition(&mut self, node: &'t ast::StmtClassDef, depth: u32) {
        let name = node.name.as_str().to_string();
        self.program.classes.insert(name.clone());
        for decorator in &node.decorator_list {
            self.expr(&decorator.expression, depth);
        }
        if let Some(arguments) = &node.arguments {
            for base in arguments.args.iter() {
                self.expr(base, depth);
            }
            for keyword in arguments.keywords.iter() {
                self.expr(&keyword.value, depth);
            }
        }
        let fields: Vec<String> = node
            .body
            .iter()
            .filter_map(|statement| match statement {
                ast::Stmt::AnnAssign(a) => match &*a.target {
                    ast::Expr::Name(n) => Some(n.id.to_string()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        if !fields.is_empty() {
            self.program.fields.insert(name.clone(), fields);
        }
        let outer = self.program.current_class.replace(name);
        self.suite(&node.body, depth);
        self.program.current_class = outer;
    }

    pub(super) fn return_statement(&mut self, node: &'t ast::StmtReturn, depth: u32) {
        let returned = node.value.as_ref().map(|value| self.expr(value, depth));
        if let (Some(slot), Some(value)) = (self.program.returns.last_mut(), returned) {
            *slot = Some(match slot.take() {
                None => value,
                // Several returns: keep the first literal-looking one, with every label.
                Some(previous) => {
                    let taints = previous.taints.union(value.taints);
                    if previous.is_literal() { previous } else { value }.with_taints(taints)
                }
            });
        }
    }

    /// `a if cond else b`: a literal branch is the value the expression can take (a default
    /// path beside `sys.argv[1]`); both branches' labels are kept.
    pub(super) fn conditional(&mut self, node: &'t ast::ExprIf, depth: u32) -> Expr {
        self.expr(&node.test, depth);
        let then = self.expr(&node.body, depth);
        let otherwise = self.expr(&node.orelse, depth);
        let taints = then.taints.union(otherwise.taints);
        let chosen = if !then.is_literal() && otherwise.is_literal() {
            otherwise
        } else {
            then
        };
        chosen.with_taints(taints)
    }

    /// `items.append(x)`, `d.update(x)`: the container now carries what was put in.
    pub(super) fn collect_into_receiver(&mut self, node: &'t ast::ExprCall, call: &Call) {
        let ast::Expr::Attribute(function) = &*node.func else {
            return;
        };
        // `image.save(buffer)`, `frame.dump(f)`: what the object holds is now in the buffer.
        if matches!(function.attr.as_str(), "save" | "dump" | "write_to" | "tofile")
            && let Some(receiver) = call.receiver.as_ref().filter(|r| !r.taints.is_empty())
            && let Some(ast::Expr::Name(target)) = node.arguments.args.first()
            && let Some(Bound::Var(existing)) = self.names.get_mut(target.id.as_str())
        {
            existing.taints = existing.taints.union(receiver.taints);
            return;
        }
        if !matches!(
            function.attr.as_str(),
            "append"
                | "extend"
                | "add"
                | "update"
                | "insert"
                | "appendleft"
                | "setdefault"
                | "put"
                | "add_attachment"
                | "attach"
                | "set_content"
                | "set_payload"
        ) {
            return;
        }
        let taints = call.all_args().fold(Taints::NONE, |t, a| t.union(a.taints));
        if taints.is_empty() {
            return;
        }
        let key = self.text(&*function.value).to_string();
        if let Some(Bound::Var(existing)) = self.names.get_mut(&key) {
            existing.taints = existing.taints.union(taints);
            if existing.trail.is_none() {
                existing.trail = call
                    .all_args()
                    .find(|a| !a.taints.is_empty())
                    .and_then(|a| a.trail.clone());
            }
        }
    }

    /// The request's value of `sys.argv[N]` or `os.environ[NAME]`, when the request is known.
    pub(super) fn outside_value(&self, mapping: &str, key: &str) -> Option<Expr> {
        let inputs = self.ctx.inputs?;
        match mapping {
            "os.environ" => inputs
                .env
                .get(key)
                .map(|v| Expr::new(Value::Str(v.clone())).step(String::new, || format!("environment variable {key}"))),
            "sys.argv" => {
                let index: usize = key.parse().ok()?;
                let value = inputs.args.get(index.checked_sub(1)?)?;
                Some(Expr::new(Value::Str(value.clone())).step(String::new, || format!("sys.argv[{index}]")))
            }
            _ => None,
        }
    }

    /// `f.write(data)` where `f` holds a file opened for writing: a write of that data to the
    /// file's path.
    pub(super) fn writes_to_opened_file(&mut self, node: &'t ast::ExprCall, call: &Call) -> Vec<Found> {
        let ast::Expr::Attribute(function) = &*node.func else {
            return Vec::new();
        };
        // (An archive's `add`, `write` and `writestr` put a file or data into it.)
        if !matches!(
            function.attr.as_str(),
            "write" | "writelines" | "add" | "writestr" | "addfile"
        ) {
            return Vec::new();
        }
        let path = match &*function.value {
            ast::Expr::Name(object) => self.program.opened.get(object.id.as_str()).cloned(),
            ast::Expr::Call(_) => self.program.last_open.as_ref().map(|(_, p)| p.clone()),
            _ => None,
        };
        let Some(path) = path else {
            return Vec::new();
        };
        let mut fact = Call::new("@write".into(), call.span);
        fact.via = vec!["open".into()];
        fact.taints = call.taints;
        fact.args.push(path);
        vec![Found { call: fact, code: None }]
    }

    /// Follows a call of the file's own function, method or class into its body with the
    /// call's arguments bound to the parameters; returns what it returns.
    pub(super) fn follow_call(&mut self, node: &'t ast::ExprCall, call: &Call, depth: u32) -> Option<Expr> {
        let (key, definition, receiver) = match &*node.func {
            ast::Expr::Name(function) => {
                let name = function.id.to_string();
                if let Some(lambda) = self.program.lambdas.get(&name).copied() {
                    return self.follow_lambda(&name, lambda, call, depth);
                }
                if let Some(definition) = self.program.functions.get(&name) {
                    (name, *definition, None)
                } else if self.program.classes.contains(&name) {
                    let init = self.program.methods.get(&format!("{name}.__init__")).copied();
                    let instance = Expr::new(Value::Call(name.clone()));
                    if let Some(init) = init {
                        self.follow(&format!("{name}.__init__"), init, call, Some(instance.clone()), depth);
                    } else if let Some(fields) = self.program.fields.get(&name).cloned() {
                        // A dataclass's generated `__init__`: the arguments set its fields in order.
                        let mut positional = call.args.iter();
                        for field in fields {
                            let value = call.kwarg(&field).or_else(|| positional.next()).cloned();
                            if let Some(value) = value {
                                self.names.insert(format!("self.{field}"), Bound::Var(value));
                            }
                        }
                    }
                    return Some(instance);
                } else {
                    return None;
                }
            }
            ast::Expr::Attribute(function) => {
                let method = function.attr.as_str().to_string();
                let on_self = matches!(&*function.value, ast::Expr::Name(n) if n.id.as_str() == "self");
                let class = match &call.receiver {
                    Some(Expr {
                        value: Value::Call(c), ..
                    }) if self.program.classes.contains(c) => Some(c.clone()),
                    _ if on_self => self.program.current_class.clone(),
                    _ => None,
                };
                if class.is_none() && !on_self {
                    return None;
                }
                let qualified = class.map(|c| format!("{c}.{method}"));
                let definition = qualified
                    .as_ref()
                    .and_then(|q| self.program.methods.get(q))
                    .or_else(|| self.program.methods.get(&method))
                    .copied()?;
                (
                    qualified.unwrap_or(method),
                    definition,
                    Some(call.receiver.clone().unwrap_or_else(|| Expr::other(Taints::NONE))),
                )
            }
            _ => return None,
        };
        if call.args.is_empty() && call.kwargs.is_empty() && receiver.is_none() {
            return self.program.summaries.get(&key).cloned();
        }
        self.follow(&key, definition, call, receiver, depth)
    }

    /// A lambda bound to a name, called: its body with the call's arguments bound.
    fn follow_lambda(&mut self, key: &str, lambda: &'t ast::ExprLambda, call: &Call, depth: u32) -> Option<Expr> {
        if self.program.calling.len() >= MAX_CALL_DEPTH
            || self.program.followed >= MAX_FOLLOWED_CALLS
            || self.program.calling.iter().any(|c| c == key)
        {
            return None;
        }
        self.program.followed += 1;
        let saved = self.names.clone();
        if let Some(parameters) = &lambda.parameters {
            let mut positional = call.args.iter();
            for parameter in parameters.iter_non_variadic_params() {
                let name = parameter.parameter.name.as_str();
                let value = call
                    .kwarg(name)
                    .or_else(|| positional.next())
                    .cloned()
                    .unwrap_or_else(|| Expr::new(Value::Name(name.to_string())));
                self.names.insert(name.to_string(), Bound::Var(value));
            }
        }
        self.program.calling.push(key.to_string());
        let returned = self.expr(&lambda.body, depth + 1);
        self.program.calling.pop();
        self.names = saved;
        Some(returned)
    }

    pub(super) fn follow(
        &mut self,
        key: &str,
        definition: &'t ast::StmtFunctionDef,
        call: &Call,
        receiver: Option<Expr>,
        depth: u32,
    ) -> Option<Expr> {
        if self.program.calling.len() >= MAX_CALL_DEPTH
            || self.program.followed >= MAX_FOLLOWED_CALLS
            || self.program.calling.iter().any(|c| c == key)
        {
            return None;
        }
        self.program.followed += 1;
        let line = call.span.line;
        let short_name = key.rsplit('.').next().unwrap_or(key).to_string();
        let bindings = self.bind_parameters(definition, call, receiver, &short_name, line, depth);
        let saved = self.names.clone();
        for (name, value) in bindings {
            self.names.insert(name, Bound::Var(value));
        }
        let class = key
            .split_once('.')
            .map(|(c, _)| c.to_string())
            .filter(|c| self.program.classes.contains(c));
        let class = class.or_else(|| self.program.current_class.clone());
        let outer_class = std::mem::replace(&mut self.program.current_class, class);
        self.program.calling.push(key.to_string());
        self.program.returns.push(None);
        self.suite(&definition.body, depth + 1);
        let returned = self.program.returns.pop().flatten();
        self.program.calling.pop();
        self.program.current_class = outer_class;
        // Locals end with the call; attributes set on `self` outlive it.
        let inner = std::mem::replace(&mut self.names, saved);
        for (name, bound) in inner {
            if name.starts_with("self.") {
                self.names.insert(name, bound);
            }
        }
        returned
    }

    fn bind_parameters(
        &mut self,
        definition: &'t ast::StmtFunctionDef,
        call: &Call,
        receiver: Option<Expr>,
        function: &str,
        line: u32,
        depth: u32,
    ) -> Vec<(String, Expr)> {
        let parameters = &definition.parameters;
        let mut bindings = Vec::new();
        let mut positional = call.args.iter();
        let mut receiver = receiver;
        let keyword_only = parameters.kwonlyargs.iter().map(|p| (p, true));
        let ordered = parameters
            .posonlyargs
            .iter()
            .chain(parameters.args.iter())
            .map(|p| (p, false))
            .chain(keyword_only);
        for (parameter, keyword_only) in ordered {
            let name = parameter.parameter.name.as_str().to_string();
            let given = if let Some(instance) = receiver.take() {
                Some(instance)
            } else if let Some(value) = call.kwarg(&name) {
                Some(value.clone())
            } else if keyword_only {
                None
            } else {
                positional.next().cloned()
            };
            let value = match (given, &parameter.default) {
                (Some(value), _) => value,
                (None, Some(default)) => self.expr(default, depth + 1),
                (None, None) => Expr::new(Value::Name(name.clone())),
            };
            let value = value.step(
                || "an argument".into(),
                || format!("`{function}({name})` (line {line})"),
            );
            bindings.push((name, value));
        }
        // `def report(**fields)`: the keyword arguments no parameter took, as a mapping (its
        // values, with their labels).
        if let Some(rest) = &parameters.kwarg {
            let named: Vec<&str> = bindings.iter().map(|(n, _): &(String, Expr)| n.as_str()).collect();
            let items: Vec<Expr> = call
                .kwargs
                .iter()
                .filter(|(k, _)| !named.contains(&k.as_str()))
                .map(|(_, v)| v.clone())
                .collect();
            let taints = items.iter().fold(Taints::NONE, |t, i| t.union(i.taints));
            let name = rest.name.as_str().to_string();
            let value = Expr::new(Value::Seq(items)).with_taints(taints).step(
                || "the keyword arguments".into(),
                || format!("`{function}(**{name})` (line {line})"),
            );
            bindings.push((name, value));
        }
        // `def show(*paths)`: the rest of the positional arguments, as a tuple.
        if let Some(rest) = &parameters.vararg {
            let name = rest.name.as_str().to_string();
            let items: Vec<Expr> = positional.cloned().collect();
            let taints = items.iter().fold(Taints::NONE, |t, i| t.union(i.taints));
            let value = Expr::new(Value::Seq(items)).with_taints(taints).step(
                || "the arguments".into(),
                || format!("`{function}(*{name})` (line {line})"),
            );
            bindings.push((name, value));
        }
        bindings
    }
}
