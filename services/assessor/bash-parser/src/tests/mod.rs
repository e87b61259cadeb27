//! What the parser makes of each construct, shown as a compact text form of the tree:
//! `(cmd ...)` a simple command, `(decl ...)` a declaration, `(pipe a | b)`, `(list a && b)`,
//! compound commands by their keyword; words with several parts in `[...]`, expansions always
//! braced (`${x}`, `${x - default}`), substitutions as `$(...)`.

use super::ast::*;
use super::{Unlimited, parse};

mod constructs;
mod properties;

fn script(source: &str) -> Script {
    parse(source, 256, &mut Unlimited).expect("within budget")
}

/// The tree, in the compact form; panics if there was a syntax error.
fn show(source: &str) -> String {
    let parsed = script(source);
    assert!(parsed.errors.is_empty(), "{source:?}: {:?}", parsed.errors);
    Show {
        source,
        script: &parsed,
    }
    .list(&parsed.body)
}

/// The syntax errors: (line, message).
fn errors(source: &str) -> Vec<(usize, &'static str)> {
    script(source)
        .errors
        .iter()
        .map(|e| (source[..e.offset as usize].matches('\n').count() + 1, e.message))
        .collect()
}

struct Show<'a> {
    source: &'a str,
    script: &'a Script,
}

impl Show<'_> {
    fn text(&self, range: Range) -> &str {
        range.text(self.source)
    }

    fn list(&self, stmts: &[Stmt]) -> String {
        stmts.iter().map(|s| self.stmt(s)).collect::<Vec<_>>().join("; ")
    }

    fn stmt(&self, stmt: &Stmt) -> String {
        match &stmt.kind {
            StmtKind::Simple(simple) => {
                let mut items: Vec<String> = simple.assignments.iter().map(|a| self.assignment(a)).collect();
                items.extend(simple.words.iter().map(|w| self.word(w)));
                items.extend(simple.redirects.iter().map(|r| self.redirect(r)));
                format!("(cmd {})", items.join(" "))
            }
            StmtKind::Declaration(declaration) => {
                let mut items = vec![self.word(&declaration.keyword)];
                for arg in &declaration.args {
                    items.push(match arg {
                        DeclarationArg::Word(word) => self.word(word),
                        DeclarationArg::Assignment(assignment) => self.assignment(assignment),
                    });
                }
                items.extend(declaration.redirects.iter().map(|r| self.redirect(r)));
                format!("(decl {})", items.join(" "))
            }
            StmtKind::Pipeline(pipeline) => {
                let stages: Vec<String> = pipeline.stages.iter().map(|s| self.stmt(s)).collect();
                let bang = if pipeline.negated { "! " } else { "" };
                format!("(pipe {bang}{})", stages.join(" | "))
            }
            StmtKind::AndOr(list) => {
                let mut text = self.stmt(&list.first);
                for (op, stmt) in &list.rest {
                    text.push_str(if *op == AndOrOp::And { " && " } else { " || " });
                    text.push_str(&self.stmt(stmt));
                }
                format!("(list {text})")
            }
            StmtKind::Compound(compound) => {
                let mut text = self.compound(&compound.kind);
                for redirect in &compound.redirects {
                    text.push(' ');
                    text.push_str(&self.redirect(redirect));
                }
                text
            }
            StmtKind::Function(function) => {
                format!("(function {} {})", self.word(&function.name), self.stmt(&function.body))
            }
        }
    }

    fn compound(&self, kind: &CompoundKind) -> String {
        match kind {
            CompoundKind::Group(body) => format!("(group {})", self.list(body)),
            CompoundKind::Subshell(body) => format!("(subshell {})", self.list(body)),
            CompoundKind::If(clause) => {
                let mut text = String::from("(if");
                for (i, (condition, body)) in clause.branches.iter().enumerate() {
                    let keyword = if i == 0 { "" } else { " elif" };
                    text.push_str(&format!("{keyword} {} then {}", self.list(condition), self.list(body)));
                }
                if let Some(body) = &clause.otherwise {
                    text.push_str(&format!(" else {}", self.list(body)));
                }
                text + ")"
            }
            CompoundKind::While(clause) => format!(
                "({} {} do {})",
                if clause.until { "until" } else { "while" },
                self.list(&clause.condition),
                self.list(&clause.body)
            ),
            CompoundKind::For(clause) => {
                let keyword = if clause.select { "select" } else { "for" };
                let words = match &clause.words {
                    Some(words) => {
                        let words: Vec<String> = words.iter().map(|w| self.word(w)).collect();
                        format!(" in {}", words.join(" "))
                    }
                    None => String::new(),
                };
                format!(
                    "({keyword} {}{words} do {})",
                    self.text(clause.variable),
                    self.list(&clause.body)
                )
            }
            CompoundKind::ArithFor(parts, body) => {
                format!("(for (({})) do {})", self.parts(parts, " "), self.list(body))
            }
            CompoundKind::Case(case) => {
                let items: Vec<String> = case
                    .items
                    .iter()
                    .map(|item| {
                        let patterns: Vec<String> = item.patterns.iter().map(|w| self.word(w)).collect();
                        format!("{}) {}", patterns.join("|"), self.list(&item.body))
                    })
                    .collect();
                format!("(case {} in {})", self.word(&case.word), items.join(" ;; "))
            }
            CompoundKind::Test(words) => {
                let words: Vec<String> = words.iter().map(|w| self.word(w)).collect();
                format!("(test {})", words.join(" "))
            }
            CompoundKind::Arith(parts) => format!("(arith {})", self.parts(parts, " ")),
            CompoundKind::Coproc(body) => format!("(coproc {})", self.stmt(body)),
        }
    }

    fn assignment(&self, assignment: &Assignment) -> String {
        let op = if assignment.append { "+=" } else { "=" };
        let value = match &assignment.value {
            AssignValue::Empty => String::new(),
            AssignValue::Word(word) => self.word(word),
            AssignValue::Array(_, words) => {
                let words: Vec<String> = words.iter().map(|w| self.word(w)).collect();
                format!("({})", words.join(" "))
            }
        };
        format!("{}{op}{value}", self.text(assignment.name))
    }

    fn redirect(&self, redirect: &Redirect) -> String {
        let op = match redirect.op {
            RedirectOp::Read => "<",
            RedirectOp::Write => ">",
            RedirectOp::Append => ">>",
            RedirectOp::ReadWrite => "<>",
            RedirectOp::Clobber => ">|",
            RedirectOp::WriteAll => "&>",
            RedirectOp::AppendAll => "&>>",
            RedirectOp::DupRead => "<&",
            RedirectOp::DupWrite => ">&",
            RedirectOp::Heredoc => "<<",
            RedirectOp::HereString => "<<<",
        };
        let fd = redirect.fd.map(|fd| self.text(fd)).unwrap_or_default();
        let target = match &redirect.target {
            RedirectTarget::Word(word) => self.word(word),
            RedirectTarget::Heredoc(index) => {
                let heredoc = &self.script.heredocs[*index as usize];
                format!("[{}]", self.parts(&heredoc.parts, ""))
            }
            RedirectTarget::Missing => "?".into(),
        };
        format!("{fd}{op}{target}")
    }

    fn word(&self, word: &Word) -> String {
        match &word.parts[..] {
            [part] => self.part(part),
            parts => format!("[{}]", self.parts(parts, " ")),
        }
    }

    fn parts(&self, parts: &[WordPart], separator: &str) -> String {
        parts.iter().map(|p| self.part(p)).collect::<Vec<_>>().join(separator)
    }

    fn part(&self, part: &WordPart) -> String {
        match part {
            WordPart::Literal(r) | WordPart::QuotedLiteral(r) | WordPart::RawLiteral(r) => self.text(*r).to_string(),
            WordPart::SingleQuoted(r) => format!("'{}'", self.text(*r)),
            WordPart::AnsiC(r) => format!("$'{}'", self.text(*r)),
            WordPart::DoubleQuoted(_, parts) => format!("\"{}\"", self.parts(parts, "")),
            WordPart::Param(param) => self.param(param),
            WordPart::CommandSub(_, body) => format!("$({})", self.list(body)),
            WordPart::ProcessSub(r, body) => format!("{}({})", &self.text(*r)[..1], self.list(body)),
            WordPart::Arith(_, parts) => format!("$(({}))", self.parts(parts, " ")),
        }
    }

    fn param(&self, param: &Param) -> String {
        let mut text = String::from("${");
        if param.length {
            text.push('#');
        }
        if param.indirect {
            text.push('!');
        }
        text.push_str(self.text(param.name));
        if let Some(index) = &param.subscript {
            text.push_str(&format!("[{}]", self.word(index)));
        }
        if let Some(op) = param.op {
            let op = match op {
                ParamOp::Default => "-",
                ParamOp::Assign => "=",
                ParamOp::Alternative => "+",
                ParamOp::Error => "?",
                ParamOp::Trim => "#",
                ParamOp::Replace => "/",
                ParamOp::Case => "^",
                ParamOp::Substring => ":",
                ParamOp::Transform => "@",
            };
            text.push_str(&format!(" {op}"));
        }
        if let Some(arg) = &param.arg {
            text.push_str(&format!(" {}", self.word(arg)));
        }
        text + "}"
    }
}
