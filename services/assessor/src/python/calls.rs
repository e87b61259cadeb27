//! Python calls: the callee's qualified name, arguments and keyword arguments, what the call
//! evaluates to, its effects and labels, code it carries, and calls of the file's own functions.

use super::expressions::{as_path, join_path, namespace, type_name};
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
        // `operator.attrgetter("sys" + "tem")(os)`: the lookup happens here, on the argument.
        if let Some(attribute) = name.strip_prefix(ATTRGETTER)
            && let Some(object) = node.arguments.args.first()
        {
            let object = self.object(object, depth + 1);
            let resolved = format!("{}.{attribute}", namespace(&type_name(&object)));
            let key = match &*node.func {
                ast::Expr::Call(inner) => inner.arguments.args.first(),
                _ => None,
            };
            self.resolved(&resolved, key, span);
            return Expr::new(Value::Name(resolved)).with_taints(object.taints);
        }
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
        // What shell code run here takes in is what it can print: the output of
        // `check_output("cat /etc/passwd", shell=True)` carries what `cat` read.
        let shell_facts_before = self.ctx.shell.calls.len();
        if let Some(mut embedded) = self.ctx.rules.embedded(Language::Python, &call) {
            // `os.execv(path, [name, ...])`: the program run is the path; the list's first item
            // is only the name it is given.
            if let Embedded::Argv(argv) = &mut embedded
                && matches!(
                    call.name.as_str(),
                    "os.execv" | "os.execve" | "os.execvp" | "os.execvpe" | "os.posix_spawn" | "os.posix_spawnp"
                )
                && let Some(path) = call.args.first().filter(|p| p.text().is_some())
                && let Some(first) = argv.first_mut()
            {
                *first = path.clone();
            }
            self.extract_embedded(embedded, span);
            let local = self.local_labels();
            let taken = self
                .ctx
                .shell
                .calls
                .get(shell_facts_before..)
                .unwrap_or_default()
                .iter()
                .fold(crate::facts::Taints::NONE, |t, c| t.union(c.taints));
            result = result.with_taints(crate::facts::Taints(taken.0 & local.0));
        }
        self.collect_into_receiver(node, &call);
        let mut found = self.ctx.rules.effects.python_effects(&call);
        found.extend(self.writes_to_opened_file(node, &call));
        let addressed = self.names_an_address(&call);
        let sent = self.client_send(node, &call, &found, addressed);
        found.extend(sent);
        let data = self.ctx.record_effects(Language::Python, found);
        result = result.with_taints(data);
        // What is made with a network address is a network client (`Redis(host=IP)`, `Minio(URL)`).
        if addressed {
            result = result.with_taints(self.ctx.rules.label("network"));
            self.configure_client(node);
        }
        self.call_through(node, &call, depth);
        self.sh_library_command(node, &call);
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
                        // An empty default only says the variable may be unset: the value is the
                        // variable's (`os.environ.get("TASK_CMD", "")` run as a command is unknown).
                        Some(default) if matches!(&default.value, Value::Str(d) if !d.trim().is_empty()) => {
                            default.clone()
                        }
                        _ => Expr::new(Value::Formatted(format!("${var}"))),
                    },
                },
                None => Expr::new(Value::Call(call.name.clone())),
            },
            "getattr" | "builtins.getattr" => match (call.args.first(), call.args.get(1).map(|a| &a.value)) {
                (Some(object), Some(Value::Str(attribute))) => {
                    let resolved = format!("{}.{attribute}", namespace(&type_name(object)));
                    self.resolved(&resolved, node.arguments.args.get(1), call.span);
                    Expr::new(Value::Name(resolved))
                }
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            // `vars(os)` is the module's namespace, `globals()` the file's.
            "vars" => match call.args.first().map(|a| &a.value) {
                Some(Value::Name(module)) => Expr::new(Value::Name(module.clone())),
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            "globals" | "locals" => Expr::new(Value::Name("globals".into())),
            "str.join" => match (&call.receiver, call.args.first()) {
                (
                    Some(Expr {
                        value: Value::Str(separator),
                        ..
                    }),
                    Some(Expr {
                        value: Value::Seq(items),
                        ..
                    }),
                ) if items.iter().all(|i| matches!(i.value, Value::Str(_))) => {
                    let texts: Vec<String> = items.iter().filter_map(|i| i.text().map(|t| t.into_owned())).collect();
                    Expr::new(Value::Str(texts.join(separator)))
                }
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            "str.format" => match &call.receiver {
                Some(Expr {
                    value: Value::Str(template),
                    ..
                }) => format_template(template, call),
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            // `compile(src, ...)` and `ast.parse(src)` are the code of their source: `exec` of
            // either runs that source.
            "compile" | "builtins.compile" | "ast.parse" => match call.args.first().or_else(|| call.kwarg("source")) {
                Some(source) => source.clone(),
                None => Expr::new(Value::Call(call.name.clone())),
            },
            // Text spelled out as character codes (`chr(111)`, `map(chr, [111, 115])`): the
            // characters they make, so a name assembled from them is seen as that name.
            "chr" | "builtins.chr" => match call.args.first().map(|a| &a.value) {
                Some(Value::Int(code)) => match u32::try_from(*code).ok().and_then(char::from_u32) {
                    Some(c) => Expr::new(Value::Str(c.to_string())),
                    None => Expr::new(Value::Call(call.name.clone())),
                },
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            "map" | "builtins.map" => match (call.args.first().map(|a| &a.value), call.args.get(1).map(|a| &a.value)) {
                (Some(Value::Name(f)), Some(Value::Seq(items))) if f == "chr" || f == "builtins.chr" => {
                    let chars: Option<Vec<Expr>> = items
                        .iter()
                        .map(|item| match item.value {
                            Value::Int(code) => u32::try_from(code)
                                .ok()
                                .and_then(char::from_u32)
                                .map(|c| Expr::new(Value::Str(c.to_string()))),
                            _ => None,
                        })
                        .collect();
                    match chars {
                        Some(chars) => Expr::new(Value::Seq(chars)),
                        None => Expr::new(Value::Call(call.name.clone())),
                    }
                }
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            // `pydoc.locate("os.system")`, `pkgutil.resolve_name("os:system")`: a function looked
            // up by its dotted name, as `getattr(__import__(module), name)` is.
            "pydoc.locate" | "pkgutil.resolve_name" => match first_text() {
                Some(dotted) if !dotted.is_empty() && !dotted.contains(char::is_whitespace) => {
                    let dotted = dotted.replace(':', ".");
                    self.resolved(&dotted, node.arguments.args.first(), call.span);
                    Expr::new(Value::Name(dotted))
                }
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            // `operator.methodcaller("system", "id")` calls the method of that name on the object it
            // is given: the lookup is `getattr`'s (see `Walker::call`).
            "operator.methodcaller" => match call.args.first().map(|a| &a.value) {
                Some(Value::Str(attribute)) if !attribute.contains('.') => {
                    Expr::new(Value::Name(format!("{ATTRGETTER}{attribute}")))
                }
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            // `bytes([111, 115])`: the bytes of those codes, read as text.
            "bytes" | "bytearray" | "builtins.bytes" | "builtins.bytearray" => {
                match call.args.first().map(|a| &a.value) {
                    Some(Value::Seq(items)) if !items.is_empty() => {
                        let codes: Option<Vec<u8>> = items
                            .iter()
                            .map(|i| match i.value {
                                Value::Int(code) => u8::try_from(code).ok(),
                                _ => None,
                            })
                            .collect();
                        match codes.and_then(|c| String::from_utf8(c).ok()) {
                            Some(text) => Expr::new(Value::Str(text)),
                            None => Expr::new(Value::Call(call.name.clone())),
                        }
                    }
                    Some(Value::Str(text)) => Expr::new(Value::Str(text.clone())),
                    _ => Expr::new(Value::Call(call.name.clone())),
                }
            }
            // Text decoded or encoded as UTF-8 or ASCII is the same text.
            "str.decode" | "str.encode" | "bytes.decode" | "bytes.encode"
                if call.args.first().is_none_or(|a| {
                    a.text().is_some_and(|t| {
                        matches!(
                            t.to_ascii_lowercase().as_str(),
                            "utf-8" | "utf8" | "ascii" | "latin-1" | "latin1"
                        )
                    })
                }) =>
            {
                match &call.receiver {
                    Some(Expr {
                        value: Value::Str(text),
                        ..
                    }) => Expr::new(Value::Str(text.clone())),
                    _ => Expr::new(Value::Call(call.name.clone())),
                }
            }
            // `base64.b64decode("Y3VybC...")`, `codecs.decode("...", "rot13")`: the text a literal
            // decodes to (still labelled decoded), so what is run from it is read.
            "base64.b64decode"
            | "base64.standard_b64decode"
            | "base64.urlsafe_b64decode"
            | "base64.decodebytes"
            | "base64.decodestring" => match first_text().and_then(|t| decode_base64(&t)) {
                Some(text) => Expr::new(Value::Str(text)),
                None => Expr::new(Value::Call(call.name.clone())),
            },
            "codecs.decode" | "codecs.encode"
                if call
                    .args
                    .get(1)
                    .and_then(|a| a.text())
                    .is_some_and(|c| matches!(c.to_ascii_lowercase().as_str(), "rot13" | "rot_13" | "rot-13")) =>
            {
                match first_text() {
                    Some(text) => Expr::new(Value::Str(rot13(&text))),
                    None => Expr::new(Value::Call(call.name.clone())),
                }
            }
            "codecs.decode"
                if call.args.get(1).and_then(|a| a.text()).is_some_and(|c| {
                    matches!(c.to_ascii_lowercase().as_str(), "base64" | "base_64" | "base64_codec")
                }) =>
            {
                match first_text().and_then(|t| decode_base64(&t)) {
                    Some(text) => Expr::new(Value::Str(text)),
                    None => Expr::new(Value::Call(call.name.clone())),
                }
            }
            // `reversed("metsys")`: the characters in the other order (joined, the reversed text).
            "reversed" | "builtins.reversed" => match call.args.first().map(|a| &a.value) {
                Some(Value::Str(text)) if text.len() <= 4096 => Expr::new(Value::Seq(
                    text.chars()
                        .rev()
                        .map(|c| Expr::new(Value::Str(c.to_string())))
                        .collect(),
                )),
                Some(Value::Seq(items)) => Expr::new(Value::Seq(items.iter().rev().cloned().collect())),
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            // `bytes.fromhex("6f73")`: the text the hexadecimal digits spell.
            "bytes.fromhex" | "bytearray.fromhex" | "binascii.unhexlify" | "binascii.a2b_hex" => match first_text() {
                Some(hex) => {
                    let digits: String = hex.chars().filter(|c| !c.is_whitespace()).collect();
                    let bytes: Option<Vec<u8>> = (0..digits.len())
                        .step_by(2)
                        .map(|i| digits.get(i..i + 2).and_then(|d| u8::from_str_radix(d, 16).ok()))
                        .collect();
                    match bytes
                        .filter(|_| digits.len().is_multiple_of(2))
                        .and_then(|b| String::from_utf8(b).ok())
                    {
                        Some(text) => Expr::new(Value::Str(text)),
                        None => Expr::new(Value::Call(call.name.clone())),
                    }
                }
                None => Expr::new(Value::Call(call.name.clone())),
            },
            // `operator.attrgetter("system")` is `getattr` waiting for its object: called with
            // one, it is that lookup (see `Walker::call`).
            "operator.attrgetter" => match call.args.first().map(|a| &a.value) {
                Some(Value::Str(attribute)) if call.args.len() == 1 && !attribute.contains('.') => {
                    Expr::new(Value::Name(format!("{ATTRGETTER}{attribute}")))
                }
                _ => Expr::new(Value::Call(call.name.clone())),
            },
            // The C library loaded through ctypes (`CDLL(None)`, `CDLL("libc.so.6")`,
            // `CDLL(find_library("c"))`): its `system` and `popen` run shell commands.
            "ctypes.CDLL" | "ctypes.cdll.LoadLibrary" | "ctypes.PyDLL" | "ctypes.CDLL.__call__"
                if call.args.first().is_none_or(names_libc) =>
            {
                Expr::new(Value::Name("ctypes.libc".into()))
            }
            "ctypes.util.find_library" if first_text().as_deref() == Some("c") => {
                Expr::new(Value::Str("libc.so.6".into()))
            }
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
                    self.resolved(&module, node.arguments.args.first(), call.span);
                    Expr::new(Value::Name(module))
                }
                None => Expr::new(Value::Call(call.name.clone())),
            },
            _ => Expr::new(Value::Call(call.name.clone())),
        }
    }

    /// A module or function looked up by name at run time (`getattr`, `__import__`, `vars(os)[...]`):
    /// an `@resolve` fact naming what was found, flagged `built` when the name is assembled in
    /// the lookup itself (joined, reversed, concatenated, formatted, decoded) rather than written
    /// out or held in a variable.
    pub(super) fn resolved(&mut self, qualified: &str, key: Option<&ast::Expr>, span: Span) {
        let mut fact = Call::new("@resolve".into(), span);
        fact.args.push(Expr::new(Value::Str(qualified.to_string())));
        if key.is_some_and(|k| {
            matches!(
                k,
                ast::Expr::BinOp(_) | ast::Expr::Call(_) | ast::Expr::Subscript(_) | ast::Expr::FString(_)
            )
        }) {
            fact.flags.push("built".into());
        }
        self.ctx.python.push_call(fact);
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
            Embedded::Opaque(language, code) => self.ctx.opaque_code(Language::Python, language, &code, span),
            Embedded::Argv(argv) => crate::shell::command_from_argv(self.ctx, argv, span),
            Embedded::Partial(language, text, code) => {
                self.ctx.opaque_code(Language::Python, language, &code, span);
                self.ctx.extract_embedded(language, &text, span);
            }
        }
    }
}

/// Base64 text (standard or URL-safe alphabet, padding optional) decoded, when what it holds is
/// UTF-8 text without control characters other than whitespace.
fn decode_base64(text: &str) -> Option<String> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .collect();
    if digits.is_empty() || digits.len() > 64 * 1024 {
        return None;
    }
    let value = |b: u8| match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for b in digits {
        buffer = (buffer << 6) | u32::from(value(b)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    let text = String::from_utf8(out).ok()?;
    text.chars()
        .all(|c| !c.is_control() || c.is_whitespace())
        .then_some(text)
}

fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

/// The name [`Walker::call_result`] gives `operator.attrgetter(NAME)`, before the attribute.
pub(super) const ATTRGETTER: &str = "operator.attrgetter:";

/// `None` (the program itself, libc included) or a name of the C library.
fn names_libc(argument: &Expr) -> bool {
    match &argument.value {
        Value::None => true,
        Value::Str(name) => {
            let file = name.rsplit('/').next().unwrap_or(name);
            file == "c" || file == "libc" || file.starts_with("libc.so") || file == "msvcrt" || file == "libc.dylib"
        }
        _ => false,
    }
}

/// `"x = {value}".format(value=42)`: the template with each field filled, a string when every
/// field's value is known text (`{}`, `{0}`, `{name}`; format specs and attributes are not read).
fn format_template(template: &str, call: &Call) -> Expr {
    let mut out = String::with_capacity(template.len());
    let mut literal = true;
    let mut taints = call.taints;
    let mut next = 0usize;
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if let Some(stripped) = after.strip_prefix('{') {
            out.push('{');
            rest = stripped;
            continue;
        }
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let field = after[..close].split([':', '!', '.', '[']).next().unwrap_or_default();
        let value = if field.is_empty() {
            next += 1;
            call.args.get(next - 1)
        } else if let Ok(index) = field.parse::<usize>() {
            call.args.get(index)
        } else {
            call.kwarg(field)
        };
        match value.and_then(|v| match &v.value {
            Value::Str(t) => Some(t.clone()),
            Value::Int(i) => Some(i.to_string()),
            _ => None,
        }) {
            Some(text) => out.push_str(&text),
            None => {
                literal = false;
                out.push_str("{}");
            }
        }
        if let Some(v) = value {
            taints = taints.union(v.taints);
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest.replace("}}", "}").as_str());
    Expr::built(out, literal, taints)
}
