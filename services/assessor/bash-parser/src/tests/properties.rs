//! Any input parses, within its bounds. (The parser's speed is measured by `assess-bench`.)

use super::*;

// ---- any input ---------------------------------------------------------------------------------

/// Every range in the tree.
fn ranges(script: &Script) -> Vec<Range> {
    fn stmts(list: &[Stmt], out: &mut Vec<Range>) {
        for stmt in list {
            statement(stmt, out);
        }
    }
    fn statement(stmt: &Stmt, out: &mut Vec<Range>) {
        out.push(stmt.range);
        match &stmt.kind {
            StmtKind::Simple(simple) => {
                out.push(simple.command_range);
                simple.assignments.iter().for_each(|a| assignment(a, out));
                simple.words.iter().for_each(|w| word(w, out));
                simple.redirects.iter().for_each(|r| redirect(r, out));
            }
            StmtKind::Declaration(declaration) => {
                word(&declaration.keyword, out);
                for arg in &declaration.args {
                    match arg {
                        DeclarationArg::Word(w) => word(w, out),
                        DeclarationArg::Assignment(a) => assignment(a, out),
                    }
                }
                declaration.redirects.iter().for_each(|r| redirect(r, out));
            }
            StmtKind::Pipeline(pipeline) => stmts(&pipeline.stages, out),
            StmtKind::AndOr(list) => {
                statement(&list.first, out);
                list.rest.iter().for_each(|(_, s)| statement(s, out));
            }
            StmtKind::Compound(compound) => {
                compound.redirects.iter().for_each(|r| redirect(r, out));
                match &compound.kind {
                    CompoundKind::Group(body) | CompoundKind::Subshell(body) => stmts(body, out),
                    CompoundKind::If(clause) => {
                        for (condition, body) in &clause.branches {
                            stmts(condition, out);
                            stmts(body, out);
                        }
                        if let Some(body) = &clause.otherwise {
                            stmts(body, out);
                        }
                    }
                    CompoundKind::While(clause) => {
                        stmts(&clause.condition, out);
                        stmts(&clause.body, out);
                    }
                    CompoundKind::For(clause) => {
                        out.push(clause.variable);
                        clause.words.iter().flatten().for_each(|w| word(w, out));
                        stmts(&clause.body, out);
                    }
                    CompoundKind::ArithFor(ps, body) => {
                        parts(ps, out);
                        stmts(body, out);
                    }
                    CompoundKind::Case(case) => {
                        word(&case.word, out);
                        for item in &case.items {
                            item.patterns.iter().for_each(|w| word(w, out));
                            stmts(&item.body, out);
                        }
                    }
                    CompoundKind::Test(words) => words.iter().for_each(|w| word(w, out)),
                    CompoundKind::Arith(ps) => parts(ps, out),
                    CompoundKind::Coproc(body) => statement(body, out),
                }
            }
            StmtKind::Function(function) => {
                word(&function.name, out);
                statement(&function.body, out);
            }
        }
    }
    fn assignment(a: &Assignment, out: &mut Vec<Range>) {
        out.push(a.range);
        out.push(a.name);
        match &a.value {
            AssignValue::Empty => {}
            AssignValue::Word(w) => word(w, out),
            AssignValue::Array(r, words) => {
                out.push(*r);
                words.iter().for_each(|w| word(w, out));
            }
        }
    }
    fn redirect(r: &Redirect, out: &mut Vec<Range>) {
        out.push(r.range);
        out.extend(r.fd);
        if let RedirectTarget::Word(w) = &r.target {
            word(w, out);
        }
    }
    fn word(w: &Word, out: &mut Vec<Range>) {
        out.push(w.range);
        parts(&w.parts, out);
    }
    fn parts(list: &[WordPart], out: &mut Vec<Range>) {
        for part in list {
            out.push(part.range());
            match part {
                WordPart::DoubleQuoted(_, inner) | WordPart::Arith(_, inner) => parts(inner, out),
                WordPart::CommandSub(_, body) | WordPart::ProcessSub(_, body) => stmts(body, out),
                WordPart::Param(param) => {
                    out.push(param.name);
                    param.subscript.iter().chain(&param.arg).for_each(|w| word(w, out));
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    stmts(&script.body, &mut out);
    for heredoc in &script.heredocs {
        out.push(heredoc.range);
        parts(&heredoc.parts, &mut out);
    }
    out
}

fn check_ranges(source: &str, max_depth: u32) -> Result<(), proptest::test_runner::TestCaseError> {
    let parsed = parse(source, max_depth, &mut crate::Unlimited).expect("within budget");
    for range in ranges(&parsed) {
        let (start, end) = (range.start as usize, range.end as usize);
        proptest::prop_assert!(
            start <= end && end <= source.len(),
            "{range:?} outside {} bytes",
            source.len()
        );
        proptest::prop_assert!(
            source.is_char_boundary(start) && source.is_char_boundary(end),
            "{range:?} not on character boundaries"
        );
    }
    for error in &parsed.errors {
        proptest::prop_assert!(error.offset as usize <= source.len());
    }
    Ok(())
}

/// Pieces of shell that open, close and confuse constructs.
const TOKENS: &[&str] = &[
    "$(",
    ")",
    "(",
    "((",
    "))",
    "$((",
    "`",
    "'",
    "\"",
    "$'",
    "$\"",
    "${",
    "}",
    "{",
    "${x:-",
    "${#",
    "${!",
    "[",
    "]",
    "[[",
    "]]",
    "<<EOF\n",
    "EOF\n",
    "<<-'E'\n",
    "\tE\n",
    "<<<",
    "\n",
    ";",
    ";;",
    ";&",
    "|",
    "||",
    "&&",
    "&",
    "|&",
    "<",
    ">",
    ">>",
    "<>",
    ">&",
    "2>&1",
    "&>",
    "{fd}>",
    "<(",
    ">(",
    "if",
    "then",
    "elif",
    "else",
    "fi",
    "while",
    "until",
    "do",
    "done",
    "for",
    "select",
    "in",
    "case",
    "esac",
    "function",
    "f()",
    "coproc",
    "time",
    "!",
    "export",
    "local",
    "x=",
    "a=(",
    "a[0]=",
    "+=",
    "$x",
    "$1",
    "$@",
    "$",
    "\\",
    "\\\n",
    "#",
    " ",
    "\t",
    "é",
    "€",
    "😀",
    "word",
    "-rf",
    "/dev/tcp/h/1",
    "@(",
    "*",
    "=~",
];

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

    #[test]
    fn any_text_parses_with_ranges_inside_it(source in "\\PC{0,200}") {
        check_ranges(&source, 64)?;
    }

    #[test]
    fn any_mix_of_shell_tokens_parses_with_ranges_inside_it(
        tokens in proptest::collection::vec(proptest::sample::select(TOKENS), 0..60)
    ) {
        check_ranges(&tokens.concat(), 64)?;
        // Stopped at a low nesting limit, wherever it falls.
        check_ranges(&tokens.concat(), 2)?;
    }
}
