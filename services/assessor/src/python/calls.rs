//! Python calls: the callee's qualified name, arguments and keyword arguments, what the call
//! evaluates to, its effects and labels, code it carries, and calls of the file's own functions.

use super::expressions::{as_path, join_path, type_name};
use super::walker::{Bound, Walker};
use crate::facts::{Binding, BindingKind, Call, Expr, Span, Value};
use crate::rules::Embedded;
use airlock_protocol::request::Language;
use ruff_python_ast::{self as ast, ArgOrKeyword};

impl<'t> Walker<'_, '_, '_, 't> {
    pub(super) fn call(&mut self, node: &'t ast::ExprCall, depth: u32) -> Expr {
        let span = self.span(node);
        let (name, receiver) = match &*node.func {
            ast::Expr::Name(f) => {
                let name = match self.names.get(f.id.as_str()) {
                    Some(Bound::Module(q)) => q.clone(),
                    Some(Bound::Var(e)) => match &e.value {
                        Value::Name(q) => q.clone(),
                        _ => f.id.to_string(),
                    },
                    None => f.id.to_string(),
                };
                (name, None)
            }
            ast::Expr::Attribute(f) => {
                let (name, object) = self.reference(f, depth);
                (name, Some(object))
            }
            f => {
                let callee = self.expr(f, depth);
                (type_name(&callee), None)
            }
        };
        let mut call = Call::new(name, span);
        if let Some(r) = &receiver {
            call.taints = r.taints;
        }
        call.receiver = receiver;
        for argument in node.arguments.iter_source_order() {
            match argument {
                ArgOrKeyword::Keyword(keyword) => {
                    let value = self.expr(&keyword.value, depth);
                    call.taints = call.taints.union(value.taints);
                    // `**options` passes names nobody can see here: only its labels count.
                    let Some(key) = &keyword.arg else {
                        continue;
                    };
                    let key = key.as_str().to_string();
                    self.ctx.python.push_binding(Binding {
                        kind: BindingKind::Kwarg,
                        target: key.clone(),
                        value: value.clone(),
                        span: self.span(keyword),
                    });
                    call.kwargs.push((key, value));
                }
                ArgOrKeyword::Arg(argument) => {
                    let value = self.expr(argument, depth);
                    call.taints = call.taints.union(value.taints);
                    call.args.push(value);
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
    pub(super) fn call_result(&mut self, call: &Call, node: &'t ast::ExprCall) -> Expr {
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
    pub(super) fn mark_formatted_receiver(&mut self, call: &Call) {
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
    pub(super) fn mark_formatted(&mut self, text: String, near: Span) {
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

    pub(super) fn extract_embedded(&mut self, embedded: Embedded, span: Span) {
        match embedded {
            Embedded::Source(language, code) => self.ctx.extract_embedded(language, &code, span),
            Embedded::Argv(argv) => crate::shell::command_from_argv(self.ctx, argv, span),
        }
    }
}
