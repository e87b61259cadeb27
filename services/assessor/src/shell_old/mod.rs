//! Shell syntax tree to facts.
//!
//! Every simple command becomes a call named after the program it runs (directory stripped), with
//! its words as arguments and its options split into flags. Wrappers (`sudo`, `nohup`, `env`,
//! `find -exec`, ... as declared by the rule set) yield a call for the wrapper and one for the
//! command they run. Redirections become pseudo-commands named `>`, `>>`, `<` and `<>` whose first
//! argument is the path, so "writes to /etc" is one rule whether it is `tee /etc/x` or `> /etc/x`.
//! Data flows through variables, command substitutions and pipelines: what a stage reads or
//! produces reaches the next stage's standard input.

use crate::extract::{Context, SyntaxErrors, with_stack};
use crate::facts::{Binding, BindingKind, Call, Expr, Span, StringLit, Taints, Value};
use crate::rules::Embedded;
use crate::treesitter::{node_text, span_of};
use airlock_protocol::request::Language;
use rustc_hash::FxHashMap as HashMap;
use tree_sitter::Node;

/// Temporary: the tree-sitter walker, kept beside the new one for a differential check.
pub static USE_OLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn extract(ctx: &mut Context<'_>, source: &str, outer: Option<Span>) -> Option<SyntaxErrors> {
    let tree = crate::treesitter::parse(Language::Bash, source, &mut ctx.budget)?;
    let errors = crate::treesitter::syntax_errors(&tree, &mut ctx.budget);
    let mut walker = Walker::new(ctx, source, outer);
    walker.visit(tree.root_node(), 0, &Pipe::default());
    Some(errors)
}

/// A command given as an argument vector (`subprocess.run(["rm", "-rf", "/"])`).
pub fn command_from_argv(ctx: &mut Context<'_>, argv: Vec<Expr>, span: Span) {
    let mut walker = Walker::new(ctx, "", Some(span));
    for word in &argv {
        walker.record_string(word, span);
    }
    walker.command_from_words(argv, span, &Pipe::default(), Vec::new());
}

/// Where a command sits in its pipeline.
#[derive(Clone, Default)]
struct Pipe {
    stdin: Taints,
    from: Vec<String>,
    to: Vec<String>,
}

struct Walker<'c, 'r, 's, 't> {
    ctx: &'c mut Context<'r>,
    source: &'s str,
    outer: Option<Span>,
    vars: HashMap<String, Expr>,
    /// Shell functions defined so far, by name: a call runs the body with `$1…` bound.
    functions: HashMap<String, Node<'t>>,
    /// `$1…` of the function being followed; `None` at the top level (the request's arguments).
    positional: Option<Vec<Expr>>,
    /// Functions being followed (no recursion) and how many calls were followed in all.
    calling: Vec<String>,
    followed: usize,
    /// Nesting depth of the statement being visited (for functions followed from a command).
    depth: u32,
    /// The directory of the latest literal `cd`, against which relative operands are read.
    cwd: Option<String>,
}

/// Calls of shell functions followed into their bodies, per program, and how deep.
const MAX_FOLLOWED_CALLS: usize = 64;
const MAX_CALL_DEPTH: usize = 4;
/// A `for` loop over literal words is followed once per word, up to this many.
const MAX_LOOP_VALUES: usize = 8;

mod follow;

mod words;

use words::literal_word;

impl<'c, 'r, 's> Walker<'c, 'r, 's, '_> {
    fn new(ctx: &'c mut Context<'r>, source: &'s str, outer: Option<Span>) -> Self {
        Walker {
            ctx,
            source,
            outer,
            vars: HashMap::default(),
            functions: HashMap::default(),
            positional: None,
            calling: Vec::new(),
            followed: 0,
            depth: 0,
            cwd: None,
        }
    }
}

impl<'t> Walker<'_, '_, '_, 't> {
    fn text(&self, node: Node<'t>) -> &str {
        node_text(node, self.source)
    }

    fn span(&self, node: Node<'t>) -> Span {
        span_of(node, self.outer)
    }

    /// Visits a statement; returns the labels of what it writes to standard output.
    fn visit(&mut self, node: Node<'t>, depth: u32, pipe: &Pipe) -> Taints {
        with_stack(|| self.visit_node(node, depth, pipe))
    }

    fn visit_node(&mut self, node: Node<'t>, depth: u32, pipe: &Pipe) -> Taints {
        if self.ctx.stop_at(depth) {
            return Taints::NONE;
        }
        self.depth = depth;
        self.ctx.reached(node.start_position().row as u32 + 1, self.outer);
        match node.kind() {
            "command" => self.command(node, depth, pipe),
            "pipeline" => self.pipeline(node, depth, pipe),
            "redirected_statement" => self.redirected(node, depth, pipe),
            "variable_assignment" => {
                self.assignment(node, depth);
                Taints::NONE
            }
            "declaration_command" | "unset_command" => self.declaration(node, depth, pipe),
            "function_definition" => {
                if let Some(name) = node.child_by_field_name("name") {
                    let name = literal_word(self.text(name));
                    if let Some(body) = node.child_by_field_name("body")
                        && self.pipes_into_itself(body, &name)
                    {
                        let fact = Call::new("@fork-bomb".into(), self.span(node));
                        self.ctx.shell.push_call(fact);
                    }
                    if let Some(body) = node.child_by_field_name("body") {
                        self.functions.insert(name, body);
                    }
                }
                // The body once as written (parameters unknown), for what it does whoever calls it.
                match node.child_by_field_name("body") {
                    Some(body) => self.visit(body, depth + 1, pipe),
                    None => Taints::NONE,
                }
            }
            "for_statement" => self.for_statement(node, depth, pipe),
            "comment" | "heredoc_body" | "heredoc_start" | "heredoc_end" => Taints::NONE,
            "string"
            | "word"
            | "raw_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "number" => self.word(node, depth).taints,
            _ => {
                let mut output = Taints::NONE;
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    output = output.union(self.visit(child, depth + 1, pipe));
                }
                output
            }
        }
    }

    fn assignment(&mut self, node: Node<'t>, depth: u32) {
        let Some(name) = node.child_by_field_name("name") else {
            return;
        };
        let value = match node.child_by_field_name("value") {
            Some(v) => self.word(v, depth + 1),
            None => Expr::new(Value::Str(String::new())),
        };
        let name = self.text(name).to_string();
        let line = self.span(node).line;
        let value = value.step(|| "a command's output".into(), || format!("`{name}` (line {line})"));
        self.preload(&name, &value, self.span(node));
        let binding = Binding {
            kind: BindingKind::Assign,
            target: name.clone(),
            value: value.clone(),
            span: self.span(node),
        };
        self.ctx.shell.push_binding(binding);
        self.vars.insert(name, value);
    }

    /// `export A=b`, `local x`, `unset HISTFILE`: assignments, and a command named after the
    /// keyword whose arguments are the words as written (`HISTFILE=/dev/null`).
    fn declaration(&mut self, node: Node<'t>, depth: u32, pipe: &Pipe) -> Taints {
        let keyword = node.child(0).map(|k| self.text(k).to_string()).unwrap_or_default();
        let span = self.span(node);
        let mut words = vec![Expr::new(Value::Str(keyword))];
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => {
                    self.assignment(child, depth + 1);
                    let name = child
                        .child_by_field_name("name")
                        .map(|n| self.text(n).to_string())
                        .unwrap_or_default();
                    let value = self
                        .vars
                        .get(&name)
                        .cloned()
                        .unwrap_or_else(|| Expr::new(Value::Str(String::new())));
                    let text = format!("{name}={}", value.text().unwrap_or_default());
                    let word = Expr {
                        value: if matches!(value.value, Value::Str(_)) {
                            Value::Str(text)
                        } else {
                            Value::Formatted(text)
                        },
                        taints: value.taints,
                        trail: None,
                    };
                    self.record_string(&word, span);
                    words.push(word);
                }
                "comment" => {}
                _ => {
                    let word = self.word(child, depth + 1);
                    self.record_string(&word, span);
                    words.push(word);
                }
            }
        }
        self.command_from_words(words, span, pipe, Vec::new())
    }

    fn pipeline(&mut self, node: Node<'t>, depth: u32, pipe: &Pipe) -> Taints {
        let mut cursor = node.walk();
        let stages: Vec<Node<'t>> = node
            .named_children(&mut cursor)
            .filter(|n| n.kind() != "comment")
            .collect();
        let names: Vec<String> = stages.iter().map(|s| self.stage_name(*s)).collect();
        let mut stdin = pipe.stdin;
        for (i, stage) in stages.iter().enumerate() {
            let mut from = pipe.from.clone();
            from.extend(names[..i].iter().cloned());
            let mut to: Vec<String> = names[i + 1..].to_vec();
            to.extend(pipe.to.iter().cloned());
            let stage_pipe = Pipe { stdin, from, to };
            stdin = self.visit(*stage, depth + 1, &stage_pipe);
        }
        stdin
    }

    /// The program a pipeline stage runs, for `pipe_from` / `pipe_to`.
    fn stage_name(&self, stage: Node<'t>) -> String {
        let command = match stage.kind() {
            "redirected_statement" => stage.child_by_field_name("body"),
            _ => Some(stage),
        };
        command
            .filter(|c| c.kind() == "command")
            .and_then(|c| c.child_by_field_name("name"))
            .map(|n| program_name(&literal_word(self.text(n))))
            .unwrap_or_default()
    }

    fn redirected(&mut self, node: Node<'t>, depth: u32, pipe: &Pipe) -> Taints {
        let body = node.child_by_field_name("body");
        let body_name = body.map(|b| self.stage_name(b)).unwrap_or_default();
        let mut stdin = pipe.stdin;
        let mut writes = Vec::new();
        let mut heredoc = None;
        let mut cursor = node.walk();
        for redirect in node.children_by_field_name("redirect", &mut cursor) {
            match redirect.kind() {
                "file_redirect" => {
                    let Some((operator, target)) = self.file_redirect(redirect, depth) else {
                        continue;
                    };
                    if operator == "<" || operator == "<>" {
                        let read = self.pseudo_command(&operator, target.clone(), redirect, &body_name, Taints::NONE);
                        stdin = stdin.union(read);
                    }
                    // `<>` opens for reading and writing: recorded once, as a read.
                    if operator != "<" && operator != "<>" {
                        writes.push((operator, target, redirect));
                    }
                }
                "heredoc_redirect" | "herestring_redirect" => {
                    let content = self.heredoc_content(redirect, depth);
                    stdin = stdin.union(content.taints);
                    heredoc = Some(content);
                }
                _ => {}
            }
        }
        // `python3 - <<EOF ... EOF` and `bash <<< "..."` run the text they are given.
        if let Some(content) = &heredoc
            && let Some(text) = content.text()
        {
            let interpreter = match body_name.as_str() {
                "bash" | "sh" | "zsh" | "dash" | "ksh" | "ash" => Some(Language::Bash),
                n if n.starts_with("python") => Some(Language::Python),
                _ => None,
            };
            if let Some(language) = interpreter {
                let span = self.span(node);
                let text = text.into_owned();
                self.ctx.extract_embedded(language, &text, span);
            }
        }
        let body_pipe = Pipe {
            stdin,
            from: pipe.from.clone(),
            to: pipe.to.clone(),
        };
        let output = match body {
            Some(b) => self.visit(b, depth + 1, &body_pipe),
            None => Taints::NONE,
        };
        for (operator, target, redirect) in writes {
            let written = output.union(heredoc.as_ref().map_or(Taints::NONE, |h| h.taints));
            self.pseudo_command(&operator, target, redirect, &body_name, written);
        }
        output
    }

    /// `2>&1` and friends duplicate descriptors and name no file: `None` for those.
    fn file_redirect(&mut self, redirect: Node<'t>, depth: u32) -> Option<(String, Expr)> {
        let mut operator = String::new();
        let mut target = None;
        let mut cursor = redirect.walk();
        for child in redirect.children(&mut cursor) {
            if !child.is_named() {
                operator = self.text(child).to_string();
            } else if redirect
                .child_by_field_name("destination")
                .is_some_and(|d| d.id() == child.id())
                && target.is_none()
            {
                target = Some(self.word(child, depth + 1));
            }
        }
        let target = target?;
        if let Value::Str(t) = &target.value
            && (t == "-" || t.chars().all(|c| c.is_ascii_digit()))
        {
            return None;
        }
        let operator = match operator.as_str() {
            ">>" | "&>>" => ">>",
            "<" => "<",
            "<>" => "<>",
            _ => ">",
        };
        Some((operator.to_string(), target))
    }

    fn pseudo_command(
        &mut self,
        operator: &str,
        target: Expr,
        node: Node<'t>,
        writer: &str,
        written: Taints,
    ) -> Taints {
        let span = self.span(node);
        self.record_string(&target, span);
        let mut call = Call::new(operator.to_string(), span);
        call.taints = target.taints.union(written);
        call.args.push(target);
        if !writer.is_empty() {
            call.pipe_from.push(writer.to_string());
        }
        let labels = self.ctx.rules.call_labels(Language::Bash, &call);
        // A redirection is a read, a write or an append of its file, like any tool's.
        let kind = match operator {
            ">" => Some("@write"),
            ">>" => Some("@append"),
            "<" | "<>" => Some("@read"),
            _ => None,
        };
        let mut read = Taints::NONE;
        // `> /dev/tcp/host/port` sends what is written to the network.
        if let Some(target) = call
            .args
            .first()
            .and_then(|a| a.text())
            .filter(|t| t.starts_with("/dev/tcp/") || t.starts_with("/dev/udp/"))
        {
            let mut facts = Vec::new();
            let names = if operator == "<" || operator == "<>" {
                ["@connect", "@fetch"]
            } else {
                ["@connect", "@send"]
            };
            for name in names {
                let mut fact = Call::new(name.to_string(), span);
                fact.via = vec![operator.to_string()];
                fact.via.extend(call.pipe_from.iter().cloned());
                fact.taints = call.taints;
                fact.args
                    .push(Expr::new(Value::Str(target.to_string())).with_taints(call.taints));
                facts.push(crate::effects::Found { call: fact, code: None });
            }
            read = read.union(self.ctx.record_effects(Language::Bash, facts));
        }
        if let Some(kind) = kind
            && !call
                .args
                .first()
                .and_then(|a| a.text())
                .is_some_and(|t| t.starts_with("/dev/tcp/") || t.starts_with("/dev/udp/") || t == "/dev/null")
        {
            let mut fact = Call::new(kind.to_string(), span);
            fact.via = vec![operator.to_string()];
            fact.via.extend(call.pipe_from.iter().cloned());
            fact.taints = call.taints;
            fact.args = call.args.clone();
            read = self
                .ctx
                .record_effects(Language::Bash, vec![crate::effects::Found { call: fact, code: None }]);
        }
        self.ctx.shell.push_call(call);
        labels.union(read)
    }

    fn heredoc_content(&mut self, redirect: Node<'t>, depth: u32) -> Expr {
        let mut text = String::new();
        let mut literal = true;
        let mut taints = Taints::NONE;
        let mut cursor = redirect.walk();
        for child in redirect.named_children(&mut cursor) {
            match child.kind() {
                "heredoc_body" => {
                    let mut parts = child.walk();
                    let mut any_part = false;
                    for part in child.named_children(&mut parts) {
                        any_part = true;
                        if part.kind() == "heredoc_content" {
                            text.push_str(self.text(part));
                        } else {
                            let expr = self.word(part, depth + 1);
                            literal = false;
                            taints = taints.union(expr.taints);
                            text.push_str(&expr.text().unwrap_or_default());
                        }
                    }
                    if !any_part {
                        text.push_str(self.text(child));
                    }
                }
                "heredoc_start" | "heredoc_end" | "file_descriptor" => {}
                _ => {
                    let expr = self.word(child, depth + 1);
                    literal &= matches!(expr.value, Value::Str(_));
                    taints = taints.union(expr.taints);
                    text.push_str(&expr.text().unwrap_or_default());
                }
            }
        }
        let span = self.span(redirect);
        self.ctx.shell.push_string(StringLit {
            text: text.clone(),
            formatted: !literal,
            span,
        });
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

    fn command(&mut self, node: Node<'t>, depth: u32, pipe: &Pipe) -> Taints {
        let span = self.span(node);
        let mut words = Vec::new();
        let mut cursor = node.walk();
        let mut stdin = pipe.stdin;
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                // `FOO=bar cmd` sets FOO for cmd only; its value still carries labels.
                "variable_assignment" => {
                    if let Some(v) = child.child_by_field_name("value") {
                        let value = self.word(v, depth + 1);
                        stdin = stdin.union(value.taints);
                        if let Some(name) = child.child_by_field_name("name") {
                            let name = self.text(name).to_string();
                            self.preload(&name, &value, span);
                        }
                    }
                }
                "file_redirect" => {
                    if let Some((operator, target)) = self.file_redirect(child, depth) {
                        let name = node
                            .child_by_field_name("name")
                            .map(|n| program_name(&literal_word(self.text(n))))
                            .unwrap_or_default();
                        let read = self.pseudo_command(&operator, target, child, &name, Taints::NONE);
                        stdin = stdin.union(read);
                    }
                }
                "herestring_redirect" => {
                    stdin = stdin.union(self.heredoc_content(child, depth).taints);
                }
                "comment" => {}
                _ => {
                    let word = self.word(child, depth + 1);
                    self.record_string(&word, span);
                    words.push(word);
                }
            }
        }
        let pipe = Pipe {
            stdin,
            from: pipe.from.clone(),
            to: pipe.to.clone(),
        };
        self.command_from_words(words, span, &pipe, Vec::new())
    }

    fn record_string(&mut self, word: &Expr, span: Span) {
        let (text, formatted) = match &word.value {
            Value::Str(s) => (s.clone(), false),
            Value::Formatted(s) => (s.clone(), true),
            _ => return,
        };
        self.ctx.shell.push_string(StringLit { text, formatted, span });
    }

    /// Builds the call for an argument vector, unwrapping wrappers; returns the labels of its
    /// output.
    fn command_from_words(&mut self, words: Vec<Expr>, span: Span, pipe: &Pipe, via: Vec<String>) -> Taints {
        let Some(first) = words.first() else {
            return pipe.stdin;
        };
        let mut name = program_name(&first.text().unwrap_or_default());
        // `subprocess.run([sys.executable, ...])` runs Python.
        if name == "sys.executable" {
            name = "python3".into();
        }
        let mut call = Call::new(name.clone(), span);
        call.taints = pipe.stdin.union(first.taints);
        call.pipe_from = pipe.from.clone();
        call.pipe_to = pipe.to.clone();
        call.via = via.clone();
        let mut options_done = false;
        for word in words.iter().skip(1) {
            call.taints = call.taints.union(word.taints);
            if let Value::Str(text) = &word.value
                && !options_done
            {
                if text == "--" {
                    options_done = true;
                } else if let Some(long) = text.strip_prefix("--") {
                    let long = long.split('=').next().unwrap_or_default();
                    call.flags.push(long.to_string());
                } else if let Some(short) = text.strip_prefix('-')
                    && !short.is_empty()
                    && short.chars().all(|c| c.is_ascii_alphanumeric())
                {
                    call.flags.extend(short.chars().map(String::from));
                }
            }
            call.args.push(word.clone());
        }
        let labels = self.ctx.rules.call_labels(Language::Bash, &call);
        let mut output = call.taints.union(labels);
        let embedded = self.ctx.rules.embedded(Language::Bash, &call);
        let inner = self.ctx.rules.wrapper(&name).map(|w| w.inner_command(&words));
        if name == "read" {
            self.read_into_variables(&words, &call);
        }
        if name == "cd" {
            self.cwd = match words.get(1).map(|w| &w.value) {
                None => Some("~".into()),
                Some(Value::Str(dir)) if dir != "-" => Some(match &self.cwd {
                    Some(cwd) if !dir.starts_with(['/', '~', '$']) => format!("{}/{dir}", cwd.trim_end_matches('/')),
                    _ => dir.clone(),
                }),
                _ => None,
            };
        }
        let mut found = self.ctx.rules.effects.shell_effects(&name, &words, &call);
        if let Some(cwd) = &self.cwd {
            for item in &mut found {
                if let Some(operand) = item.call.args.first_mut()
                    && let Value::Str(path) = &operand.value
                    && !path.is_empty()
                    && !path.starts_with(['/', '~', '$', '-'])
                    && !path.contains("://")
                {
                    let relative = path.trim_start_matches("./");
                    operand.value = Value::Str(format!("{}/{relative}", cwd.trim_end_matches('/')));
                }
            }
        }
        // A program run by its path (`./agent`, `/tmp/x`, `"$job"`) runs that file.
        if let Some(path) = first.text().filter(|t| t.contains('/')) {
            let mut fact = Call::new("@run".into(), span);
            fact.via = vec![name.clone()];
            fact.taints = first.taints;
            fact.args.push(Expr {
                value: Value::Str(path.into_owned()),
                taints: first.taints,
                trail: first.trail.clone(),
            });
            found.push(crate::effects::Found { call: fact, code: None });
        }
        output = output.union(self.ctx.record_effects(Language::Bash, found));
        self.ctx.shell.push_call(call);
        let depth = self.depth;
        if let Some(function_output) = self.follow_function(&name, &words, span, pipe, depth) {
            output = output.union(function_output);
        }
        match embedded {
            Some(Embedded::Source(language, code)) => self.ctx.extract_embedded(language, &code, span),
            Some(Embedded::Argv(argv)) => {
                self.command_from_words(argv, span, pipe, via.clone());
            }
            None => {}
        }
        if let Some(inner) = inner
            && !inner.is_empty()
        {
            let mut inner_via = via;
            inner_via.push(name);
            return output.union(self.command_from_words(inner, span, pipe, inner_via));
        }
        output
    }
}

/// `/usr/bin/rm` and `\rm` both run `rm`.
pub fn program_name(word: &str) -> String {
    let base = word.rsplit('/').next().unwrap_or(word);
    base.trim_start_matches('\\').to_string()
}
#[cfg(test)]
mod diff;
