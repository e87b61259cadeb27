//! Following values through a shell script: calls of its functions with `$1…` bound, loops over
//! literal words, `read` loops, and libraries preloaded into what runs.

use super::walker::{Pipe, Walker};
use crate::facts::{Call, Expr, Span, Taints, Value};
use airlock_bash_parser::ast::{CompoundKind, For, Range, Stmt, StmtKind};
use airlock_protocol::request::Language;

/// Calls of shell functions followed into their bodies, per program, and how deep.
const MAX_FOLLOWED_CALLS: usize = 64;
const MAX_CALL_DEPTH: usize = 4;
/// A `for` loop over literal words is followed once per word, up to this many.
const MAX_LOOP_VALUES: usize = 8;

use super::words::literal_word;

impl<'s> Walker<'_, '_, 's> {
    /// `[ ... ]`, `[[ ... ]]` (`@test`) and `case WORD in PATTERN)` (`@case`): a fact of what is
    /// compared with what, when a value compared carries labels (a rule can then ask what a
    /// machine's identity is compared with: `case $model in *VirtualBox*)` is a VM check,
    /// printing the model is not). `test` is a command, a fact already.
    pub(super) fn comparison(&mut self, name: &str, operands: Vec<Expr>, range: Range) {
        let taints = operands.iter().fold(Taints::NONE, |t, w| t.union(w.taints));
        if taints.is_empty() {
            return;
        }
        let mut fact = Call::new(name.into(), self.span(range));
        fact.taints = taints;
        fact.args = operands;
        self.ctx.shell.push_call(fact);
    }

    /// Runs `walk` inside a loop's body: the calls it records carry the loop flag.
    pub(super) fn looped<T>(&mut self, walk: impl FnOnce(&mut Self) -> T) -> T {
        self.ctx.shell.loop_depth += 1;
        let output = walk(self);
        self.ctx.shell.loop_depth -= 1;
        output
    }

    /// A script that runs commands it only knows at run time (`"$@"`, `$cmd`) may call any of
    /// its functions: the bodies nothing names are then visited as written after all.
    pub(super) fn functions_called_at_run_time(&mut self) {
        // What can name a function: a command whose program is unknown (not a program named by a
        // path, `sudo "$FILE"` with FILE=".../sbin/nginx", which is a file), shell code not known
        // (`eval "$x"`), or a file sourced that is not known. Code in another language
        // (`osascript <<EOF` with a variable in it) runs outside this shell and its functions.
        self.dispatched_functions();
        let flagged = |c: &Call, flag: &str| c.flags.iter().any(|f| f == flag);
        let dispatches = self.ctx.shell.calls.iter().any(|c| match c.name.as_str() {
            "@opaque" if flagged(c, "command") => {
                !c.args.first().and_then(|a| a.text()).is_some_and(|t| t.contains('/'))
            }
            "@opaque" => flagged(c, "bash") || flagged(c, "sh"),
            "source" | "." => c.args.first().is_some_and(|a| !a.is_literal()),
            _ => false,
        });
        if self.never_called.is_empty() || !dispatches {
            return;
        }
        for (_, body, depth) in std::mem::take(&mut self.never_called) {
            self.in_definition += 1;
            self.visit(body, depth, &Pipe::default());
            self.in_definition -= 1;
        }
    }

    /// Commands named by a family of the script's functions (`info=$(__powerline_"$seg"_prompt)`,
    /// `"cmd_$command" "$@"`): every function of the family may run, so each not yet visited is
    /// visited as written; a name no function of the script fits is a program known only at run
    /// time, as any other.
    pub(super) fn dispatched_functions(&mut self) {
        while !self.dispatched.is_empty() {
            let mut family = Vec::new();
            for dispatch in std::mem::take(&mut self.dispatched) {
                let fits = |name: &str| {
                    name.len() > dispatch.prefix.len() + dispatch.suffix.len()
                        && name.starts_with(&dispatch.prefix)
                        && name.ends_with(&dispatch.suffix)
                };
                if self.functions.keys().any(|name| fits(name)) {
                    family.extend(
                        self.never_called
                            .iter()
                            .filter(|(name, ..)| fits(name))
                            .map(|(name, ..)| name.clone()),
                    );
                } else {
                    self.ctx.shell.push_call(dispatch.unknown);
                }
            }
            let (run, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.never_called)
                .into_iter()
                .partition(|(name, ..)| family.contains(name));
            self.never_called = rest;
            for (_, body, depth) in run {
                self.in_definition += 1;
                self.visit(body, depth, &Pipe::default());
                self.in_definition -= 1;
            }
        }
    }

    /// A function whose body pipes itself into itself (`:(){ :|:& };:`), the shape of a fork bomb.
    pub(super) fn pipes_into_itself(&self, body: &Stmt, name: &str) -> bool {
        let StmtKind::Compound(compound) = &body.kind else {
            return false;
        };
        let (CompoundKind::Group(statements) | CompoundKind::Subshell(statements)) = &compound.kind else {
            return false;
        };
        statements.iter().any(|stmt| {
            let pipeline = match &stmt.kind {
                StmtKind::Pipeline(pipeline) => Some(pipeline),
                StmtKind::AndOr(list) => match &list.first.kind {
                    StmtKind::Pipeline(pipeline) => Some(pipeline),
                    _ => None,
                },
                _ => None,
            };
            pipeline.is_some_and(|p| {
                let names: Vec<String> = p
                    .stages
                    .iter()
                    .filter_map(|stage| match &stage.kind {
                        StmtKind::Simple(simple) => simple.words.first(),
                        _ => None,
                    })
                    .map(|word| literal_word(self.text(word.range)))
                    .collect();
                names.len() >= 2 && names.iter().all(|n| n == name)
            })
        })
    }

    /// `for x in a b c`: the body is followed once per literal word (the values a loop over a
    /// literal list takes), or once with the union of what the words carry.
    pub(super) fn for_statement(&mut self, clause: &'s For, range: Range, depth: u32, pipe: &Pipe) -> Taints {
        let mut values = Vec::new();
        for word in clause.words.iter().flatten() {
            let word = self.word(word, depth);
            // `for f in "${FILES[@]}"` of a literal array goes over its words.
            let items = match word.value {
                Value::Seq(items) => items,
                _ => vec![word],
            };
            for mut value in items {
                // The words a loop goes over are a listing (`for d in /proc/[0-9]*` lists
                // processes): sources over `@list` give the loop variable their labels.
                let mut listing = Call::new("@list".into(), self.span(range));
                listing.args.push(value.clone());
                value.taints = value.taints.union(self.ctx.rules.call_labels(Language::Bash, &listing));
                values.push(value);
            }
        }
        let body = &clause.body;
        let name = self.text(clause.variable).to_string();
        let line = self.span(range).line;
        let mut output = Taints::NONE;
        if values.is_empty() || values.len() > MAX_LOOP_VALUES {
            let taints = values.iter().fold(Taints::NONE, |t, v| t.union(v.taints));
            let mut value = Expr::other(taints);
            if let Some(first) = values.iter().find(|v| !v.taints.is_empty()) {
                value = value.with_trail_of(&[first]);
            }
            self.vars.insert(name, value);
            return self.statements(body, depth, pipe);
        }
        for value in values {
            let value = value.step(|| "a loop value".into(), || format!("`{name}` (line {line})"));
            self.vars.insert(name.clone(), value);
            output = output.union(self.statements(body, depth, pipe));
        }
        output
    }

    /// Runs a shell function's body with `$1…` bound to the words of this call.
    pub(super) fn follow_function(
        &mut self,
        name: &str,
        words: &[Expr],
        span: Span,
        pipe: &Pipe,
        depth: u32,
    ) -> Option<Taints> {
        let body = *self.functions.get(name)?;
        if self.calling.len() >= MAX_CALL_DEPTH
            || self.followed >= MAX_FOLLOWED_CALLS
            || self.calling.iter().any(|c| c == name)
        {
            return None;
        }
        self.followed += 1;
        let arguments: Vec<Expr> = words
            .iter()
            .skip(1)
            .enumerate()
            .map(|(i, w)| {
                w.clone().step(
                    || "an argument".into(),
                    || format!("`{name}` argument {} (line {})", i + 1, span.line),
                )
            })
            .collect();
        let saved = self.positional.replace(arguments);
        self.calling.push(name.to_string());
        let output = self.visit(body, depth + 1, pipe);
        self.calling.pop();
        self.positional = saved;
        Some(output)
    }

    /// `LD_PRELOAD=lib.so cmd`, `export LD_AUDIT=...`: a library loaded into every program run.
    pub(super) fn preload(&mut self, name: &str, value: &Expr, span: Span) {
        if let Some(strict) = command_variable(name) {
            self.command_in_variable(name, value, strict, span);
            return;
        }
        if !matches!(
            name,
            "LD_PRELOAD" | "LD_AUDIT" | "LD_LIBRARY_PATH" | "DYLD_INSERT_LIBRARIES"
        ) {
            return;
        }
        let mut fact = Call::new("@load".into(), span);
        fact.via = vec![name.to_string()];
        fact.taints = value.taints;
        fact.args.push(value.clone());
        self.ctx
            .record_effects(Language::Bash, vec![crate::effects::Found { call: fact, code: None }]);
    }

    /// `GIT_SSH_COMMAND=CMD git fetch`, `export LESSOPEN='| filter %s'`: a variable whose value
    /// a program runs as a shell command. A literal value is read as shell code; one known only
    /// at run time is code the assessor cannot see (for the variables programs run without
    /// being asked: `strict`), and is left alone for an editor or a pager the user chooses.
    fn command_in_variable(&mut self, name: &str, value: &Expr, strict: bool, span: Span) {
        let mut code = value.clone();
        // `LESSOPEN='| lesspipe %s'`: the command after the pipe sign, its file as `%s`.
        if let Some(text) = code.text().map(|t| t.into_owned()) {
            let command = text
                .trim_start()
                .trim_start_matches(['|', '-'])
                .trim_start()
                .to_string();
            if command != text {
                code.value = match &code.value {
                    Value::Str(_) => Value::Str(command),
                    _ => Value::Formatted(command),
                };
            }
        }
        // An editor or a pager the user chooses (`EDITOR="$1"`) is theirs to choose.
        if !code.is_literal() && !strict && code.text().is_some_and(|t| t.trim().starts_with('$')) {
            return;
        }
        let mut fact = Call::new("@shell".into(), span);
        fact.via = vec![name.to_string()];
        fact.taints = code.taints;
        fact.args.push(code.clone());
        self.ctx.record_effects(
            Language::Bash,
            vec![crate::effects::Found {
                call: fact,
                code: Some(("bash".into(), code)),
            }],
        );
    }

    /// Labels of data that must not leave the machine (as AIR-BEHAVIOUR-EXFILTRATION counts them).
    pub(super) fn local_data_labels(&self) -> Taints {
        [
            "sensitive_file",
            "environment",
            "system_file",
            "local_data",
            "system_info",
            "process_list",
            "clipboard",
            "screen",
            "keystrokes",
        ]
        .iter()
        .fold(Taints::NONE, |t, l| t.union(self.ctx.rules.label(l)))
    }

    /// `read -r a b` gives its variables what standard input carries.
    pub(super) fn read_into_variables(&mut self, words: &[Expr], call: &Call) {
        let mut skip_next = false;
        for word in words.iter().skip(1) {
            let Some(text) = word.text() else { continue };
            if skip_next {
                skip_next = false;
                continue;
            }
            if text.starts_with('-') {
                skip_next = matches!(text.as_ref(), "-p" | "-d" | "-u" | "-n" | "-N" | "-t" | "-a");
                continue;
            }
            let line = call.span.line;
            let value =
                Expr::other(call.taints).step(|| "standard input".into(), || format!("`read {text}` (line {line})"));
            self.vars.insert(text.into_owned(), value);
        }
    }
}

/// Variables whose value a program runs as a shell command: `Some(true)` for those run without
/// the user choosing them (an ssh command for git or rsync, a pager's input filter, a shell's
/// start-up file), `Some(false)` for an editor or pager the user chooses.
fn command_variable(name: &str) -> Option<bool> {
    match name {
        "GIT_SSH_COMMAND" | "GIT_SSH" | "GIT_EXTERNAL_DIFF" | "GIT_ASKPASS" | "SSH_ASKPASS" | "SUDO_ASKPASS"
        | "RSYNC_RSH" | "CVS_RSH" | "LESSOPEN" | "LESSCLOSE" | "GIT_PROXY_COMMAND" => Some(true),
        "PAGER" | "MANPAGER" | "GIT_PAGER" | "GIT_EDITOR" | "EDITOR" | "VISUAL" | "SYSTEMD_PAGER" => Some(false),
        _ => None,
    }
}
