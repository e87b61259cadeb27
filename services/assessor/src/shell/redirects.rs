//! Redirections: files read before a command runs and written after it (as pseudo-commands `<`,
//! `<>`, `>` and `>>`), `/dev/tcp` connections, and here-documents and here-strings, which are
//! the command's standard input and, given to an interpreter, code.

use super::walker::{Body, Pipe, Walker};
use super::words::{literal_word, push_bounded};
use crate::effects::program_name;
use crate::facts::{Call, Expr, StringLit, Taints, Value};
use airlock_bash_parser::ast::{Range, Redirect, RedirectOp, RedirectTarget, Simple, WordPart};
use airlock_protocol::request::Language;

impl<'s> Walker<'_, '_, 's> {
    /// Runs `body` with its redirections: reads and here-documents first (they are its input),
    /// writes after (they receive its output).
    pub(super) fn redirected(
        &mut self,
        redirects: &'s [Redirect],
        range: Range,
        body: Body<'s>,
        depth: u32,
        pipe: &Pipe,
    ) -> Taints {
        if redirects.is_empty() {
            return self.body(body, range, depth, pipe);
        }
        let body_name = match body {
            Body::Simple(simple) => self.program_of(simple),
            _ => String::new(),
        };
        let mut stdin = pipe.stdin;
        let mut writes = Vec::new();
        let mut heredoc = None;
        for redirect in redirects {
            match redirect.op {
                RedirectOp::Heredoc | RedirectOp::HereString => {
                    let content = self.heredoc_content(redirect, depth);
                    stdin = stdin.union(content.taints);
                    heredoc = Some(content);
                }
                _ => {
                    let Some((operator, target)) = self.file_redirect(redirect, depth) else {
                        continue;
                    };
                    if operator == "<" || operator == "<>" {
                        // `bash < script.sh`, `sh -s < "$1"`: the shell runs the file.
                        if is_shell(&body_name) {
                            let mut run = Call::new("@run".into(), self.span(redirect.range));
                            run.via = vec![body_name.clone()];
                            run.taints = target.taints;
                            run.args.push(target.clone());
                            self.ctx.shell.push_call(run);
                        }
                        // `<>` opens for reading and writing: recorded once, as a read.
                        let read = self.pseudo_command(operator, target, redirect.range, &body_name, Taints::NONE);
                        // `exec 3<> /dev/tcp/...` opens descriptor 3, not the command's input; a
                        // loop's `read -u 3` may read it, so for compound commands it counts.
                        let other_descriptor = redirect.fd.is_some_and(|fd| self.text(fd) != "0");
                        if !other_descriptor || matches!(body, Body::Compound(_)) {
                            stdin = stdin.union(read);
                        }
                    } else {
                        writes.push((operator, target, redirect.range));
                    }
                }
            }
        }
        // `python3 - <<EOF ... EOF` and `bash <<< "..."` run the text they are given; given
        // their code (`awk '{print $2}' <<< "$line"`, `python3 app.py <<EOF`) it is their data.
        // `source /dev/stdin <<< "$x"`, `. /dev/fd/0`: the shell reads its code from its input.
        let sources_stdin = match body {
            Body::Simple(simple) if matches!(body_name.as_str(), "source" | ".") => {
                simple.words.get(1).is_some_and(|w| {
                    matches!(
                        literal_word(self.text(w.range)).as_str(),
                        "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "-"
                    )
                })
            }
            _ => false,
        };
        let code_on_stdin = sources_stdin
            || match body {
                Body::Simple(simple) => self.reads_code_from_stdin(simple, &body_name),
                _ => false,
            };
        if let Some(content) = &heredoc
            && code_on_stdin
            && let Some(text) = content.text()
        {
            let interpreter = match body_name.as_str() {
                n if is_shell(n) || sources_stdin => Some(Language::Bash),
                n if n.starts_with("python") => Some(Language::Python),
                _ => None,
            };
            let span = self.span(range);
            // A program known only at run time (`python3 - <<< "$PY"`, `bash <<< "$BODY"`):
            // code the assessor cannot see.
            // (Text with a value filled in, a here-document naming `$HOME`, is read as written.)
            if let Some(language) = interpreter
                && !content.is_literal()
                && whole_expansion(&text)
            {
                self.ctx.opaque_code(Language::Bash, language, content, span);
            }
            if let Some(language) = interpreter {
                let text = text.into_owned();
                self.ctx.extract_embedded(language, &text, span);
            } else if let Some(language) = self.ctx.rules.effects.stdin_language(&body_name) {
                // `tclsh <<EOF`, `perl <<EOF`: code for another interpreter, read as its own.
                let code = content.clone();
                self.ctx.inline_code(&language, &code, span);
            }
        }
        let output = self.body(body, range, depth, &pipe.with_stdin(stdin));
        for (operator, target, range) in writes {
            let written = output.union(heredoc.as_ref().map_or(Taints::NONE, |h| h.taints));
            self.pseudo_command(operator, target, range, &body_name, written);
        }
        output
    }

    /// Whether the interpreter `program` of this command takes its code from its standard
    /// input: no code or script given on the command line (`bash`, `bash -s -- a b`,
    /// `python3 -`, `perl`), as opposed to `awk PROGRAM`, `python3 -c CODE`, `python3 app.py`.
    fn reads_code_from_stdin(&self, simple: &'s Simple, program: &str) -> bool {
        let words: Vec<String> = simple.words.iter().map(|w| literal_word(self.text(w.range))).collect();
        let Some(at) = words.iter().position(|w| program_name(w) == program) else {
            return true;
        };
        // The options that give code: a shell's `-c`; `-e`, `-E`, `-m`, `-f` of the others
        // (perl, ruby, node, python's `-m`, awk's `-f`).
        let code_letters: &[char] = if is_shell(program) {
            &['c']
        } else {
            &['c', 'e', 'E', 'm', 'f']
        };
        for word in &words[at + 1..] {
            match word.as_str() {
                "-" | "--" => return true,
                "--eval" | "--exec" | "--command" => return false,
                long if long.starts_with("--") => {}
                // `-lc CODE`, `-ne CODE`: letters together; `-s` reads the code from input.
                short if short.starts_with('-') => {
                    if short.contains('s') && is_shell(program) {
                        return true;
                    }
                    if short.contains(code_letters) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        true
    }

    /// The operator and target of a redirection to or from a file; `None` for those that
    /// duplicate descriptors (`2>&1`, `>&-`) and name no file.
    fn file_redirect(&mut self, redirect: &'s Redirect, depth: u32) -> Option<(&'static str, Expr)> {
        let RedirectTarget::Word(word) = &redirect.target else {
            return None;
        };
        let mut target = self.word(word, depth);
        // `done < <(compgen -W '... --load-cookies ...')`: a command's output read through a
        // pipe; what it carries flows on, its text names no file.
        if matches!(&word.parts[..], [WordPart::ProcessSub(..)]) {
            target.value = Value::Other;
        }
        if let Value::Str(t) = &target.value
            && (t == "-" || t.chars().all(|c| c.is_ascii_digit()))
        {
            return None;
        }
        let operator = match redirect.op {
            RedirectOp::Append | RedirectOp::AppendAll => ">>",
            RedirectOp::Read | RedirectOp::DupRead => "<",
            RedirectOp::ReadWrite => "<>",
            _ => ">",
        };
        Some((operator, target))
    }

    fn pseudo_command(&mut self, operator: &str, target: Expr, range: Range, writer: &str, written: Taints) -> Taints {
        let span = self.span(range);
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

    /// The text of a here-document or here-string (a string fact), with the labels of what is
    /// expanded in it.
    fn heredoc_content(&mut self, redirect: &'s Redirect, depth: u32) -> Expr {
        let mut text = String::new();
        let mut literal = true;
        let mut taints = Taints::NONE;
        match &redirect.target {
            RedirectTarget::Heredoc(index) => {
                let heredocs = self.heredocs;
                if let Some(heredoc) = heredocs.get(*index as usize) {
                    for part in &heredoc.parts {
                        if let WordPart::RawLiteral(range) = part {
                            text.push_str(self.text(*range));
                            continue;
                        }
                        let expr = self.part(part, depth);
                        literal = false;
                        taints = taints.union(expr.taints);
                        push_bounded(&mut text, &expr.text().unwrap_or_default());
                    }
                }
            }
            RedirectTarget::Word(word) => {
                let expr = self.word(word, depth);
                literal = matches!(expr.value, Value::Str(_));
                taints = expr.taints;
                text.push_str(&expr.text().unwrap_or_default());
            }
            RedirectTarget::Missing => {}
        }
        let span = self.span(redirect.range);
        self.ctx.shell.push_string(StringLit {
            text: text.clone(),
            formatted: !literal,
            span,
        });
        Expr::built(text, literal, taints)
    }
}

/// Shells that run a script read from their standard input.
pub(super) fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "ash" | "mksh" | "busybox-sh" | "rbash"
    )
}

/// Text that is one expansion and nothing else (`$PY`, `${BODY}`, `$(get_config)`): what it
/// holds is known only at run time.
fn whole_expansion(text: &str) -> bool {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix("$(").and_then(|t| t.strip_suffix(')')) {
        return !inner.contains("$(");
    }
    let name = text
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .or_else(|| text.strip_prefix('$'));
    name.is_some_and(|n| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '@' || c == '*')
    })
}
