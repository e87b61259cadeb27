//! What the parser makes of each construct, shown as a compact text form of the tree:
//! `(cmd ...)` a simple command, `(decl ...)` a declaration, `(pipe a | b)`, `(list a && b)`,
//! compound commands by their keyword; words with several parts in `[...]`, expansions always
//! braced (`${x}`, `${x - default}`), substitutions as `$(...)`.

use super::ast::*;
use super::parse;
use crate::extract::Budget;
use std::time::Duration;

fn script(source: &str) -> Script {
    let mut budget = Budget::new(Duration::from_secs(10));
    parse(source, 256, &mut budget).expect("within budget")
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

// ---- simple commands and words -------------------------------------------------------------------

#[test]
fn a_simple_command_is_its_words() {
    assert_eq!(show("echo hello world"), "(cmd echo hello world)");
    assert_eq!(show("  ls -la /tmp  # listing\n"), "(cmd ls -la /tmp)");
}

#[test]
fn assignments_before_a_command_are_its_prefix() {
    assert_eq!(show("FOO=bar cmd a"), "(cmd FOO=bar cmd a)");
    assert_eq!(show("a=1 b= c+=x"), "(cmd a=1 b= c+=x)");
    assert_eq!(show("echo a=b"), "(cmd echo a=b)");
}

#[test]
fn arrays_and_subscripts_are_assignments() {
    assert_eq!(show("a=(x \"y z\" $w)"), "(cmd a=(x \"y z\" ${w}))");
    assert_eq!(show("a+=(more)\na[0]=v"), "(cmd a+=(more)); (cmd a[0]=v)");
    assert_eq!(show("a=(\n  one # first\n  two\n)"), "(cmd a=(one two))");
}

#[test]
fn quotes_make_parts_of_one_word() {
    assert_eq!(show("echo 'a b' \"c $d\" e\\ f"), "(cmd echo 'a b' \"c ${d}\" e\\ f)");
    assert_eq!(show("echo pre\"$x\"'post'"), "(cmd echo [pre \"${x}\" 'post'])");
    assert_eq!(
        show("echo $'\\x2fetc' $\"translated\""),
        "(cmd echo $'\\x2fetc' \"translated\")"
    );
    assert_eq!(
        show("echo \"it's \\\"quoted\\\" \\$x\""),
        "(cmd echo \"it's \\\"quoted\\\" \\$x\")"
    );
}

#[test]
fn parameters_are_expansions() {
    assert_eq!(
        show("echo $x ${y} $1 $@ $# $? $$ $! $0 $_"),
        "(cmd echo ${x} ${y} ${1} ${@} ${#} ${?} ${$} ${!} ${0} ${_})"
    );
    assert_eq!(show("echo $12"), "(cmd echo [${1} 2])");
    assert_eq!(
        show("echo ${10} ${#x} ${!x} ${#} ${a[@]} ${a[$i]}"),
        "(cmd echo ${10} ${#x} ${!x} ${#} ${a[@]} ${a[${i}]})"
    );
    assert_eq!(show("echo a$ $ \"$\""), "(cmd echo a$ $ \"$\")");
}

#[test]
fn parameter_operators_keep_their_words() {
    assert_eq!(show("echo ${x:-default} ${x-d}"), "(cmd echo ${x - default} ${x - d})");
    assert_eq!(show("echo ${x:=$HOME/a b}"), "(cmd echo ${x = [${HOME} /a b]})");
    assert_eq!(
        show("echo ${x#*/} ${x%%.*} ${x/a/b}"),
        "(cmd echo ${x # */} ${x # .*} ${x / a/b})"
    );
    assert_eq!(
        show("echo ${x:+alt} ${x:?err} ${x:0:2} ${x^^} ${x@Q}"),
        "(cmd echo ${x + alt} ${x ? err} ${x : 0:2} ${x ^} ${x @ Q})"
    );
    assert_eq!(show("echo ${u:-$(id -u)}"), "(cmd echo ${u - $((cmd id -u))})");
}

#[test]
fn substitutions_are_scripts_inside_words() {
    assert_eq!(
        show("x=$(cat /etc/passwd | wc -l)"),
        "(cmd x=$((pipe (cmd cat /etc/passwd) | (cmd wc -l))))"
    );
    assert_eq!(show("echo `uname -a`"), "(cmd echo $((cmd uname -a)))");
    assert_eq!(show("diff <(ls a) >(tee b)"), "(cmd diff <((cmd ls a)) >((cmd tee b)))");
    assert_eq!(
        show("echo \"$(date) and `id`\""),
        "(cmd echo \"$((cmd date)) and $((cmd id))\")"
    );
    assert_eq!(
        show("echo $(echo $(echo deep))"),
        "(cmd echo $((cmd echo $((cmd echo deep)))))"
    );
}

#[test]
fn arithmetic_keeps_the_expansions_inside() {
    assert_eq!(show("echo $(( $x + ${y} * 2 ))"), "(cmd echo $((${x} ${y})))");
    assert_eq!(show("echo $[1 + $n]"), "(cmd echo $((${n})))");
    assert_eq!(show("(( i++ ))"), "(arith )");
    assert_eq!(show("(( n = $(wc -l < f) ))"), "(arith $((cmd wc -l <f)))");
    // `$( (` and `((` that close apart are subshells, not arithmetic.
    assert_eq!(show("x=$( (cd /; ls) )"), "(cmd x=$((subshell (cmd cd /); (cmd ls))))");
    assert_eq!(
        show("((echo a); (echo b))"),
        "(subshell (subshell (cmd echo a)); (subshell (cmd echo b)))"
    );
}

#[test]
fn keywords_are_words_where_no_command_starts() {
    assert_eq!(show("echo if then fi do done { }"), "(cmd echo if then fi do done { })");
    assert_eq!(show("echo {a,b}.txt [x]"), "(cmd echo {a,b}.txt [x])");
}

#[test]
fn line_continuations_join_lines() {
    assert_eq!(show("curl \\\n  -o out \\\n  http://x"), "(cmd curl -o out http://x)");
}

// ---- redirections and here-documents -----------------------------------------------------------

#[test]
fn redirections_belong_to_their_command() {
    assert_eq!(show("cmd > out 2>> err < in"), "(cmd cmd >out 2>>err <in)");
    assert_eq!(show("cmd >| f <> g &> h &>> i"), "(cmd cmd >|f <>g &>h &>>i)");
    assert_eq!(show("cmd 2>&1 >&2 <&0 >&-"), "(cmd cmd 2>&1 >&2 <&0 >&-)");
    assert_eq!(
        show("exec {fd}> log 3<> /dev/tcp/h/80"),
        "(cmd exec fd>log 3<>/dev/tcp/h/80)"
    );
    assert_eq!(show("> /tmp/x"), "(cmd >/tmp/x)");
    assert_eq!(show("echo a > f b"), "(cmd echo a b >f)");
}

#[test]
fn compound_commands_take_redirections() {
    assert_eq!(
        show("while read l; do echo $l; done < f"),
        "(while (cmd read l) do (cmd echo ${l})) <f"
    );
    assert_eq!(show("{ a; b; } > out 2>&1"), "(group (cmd a); (cmd b)) >out 2>&1");
}

#[test]
fn here_documents_take_the_lines_after_their_command() {
    let parsed = show("cat <<EOF > out\nhello $name\nEOF\necho done");
    assert_eq!(parsed, "(cmd cat <<[hello ${name}\n] >out); (cmd echo done)");
    assert_eq!(
        show("cat <<'EOF'\n$not expanded\nEOF\n"),
        "(cmd cat <<[$not expanded\n])"
    );
    assert_eq!(show("cat <<\"EOF\"\n$no\nEOF\n"), "(cmd cat <<[$no\n])");
    assert_eq!(show("cat <<-EOF\n\tindented\n\tEOF\n"), "(cmd cat <<[indented\n])");
}

#[test]
fn several_here_documents_on_one_line_come_in_order() {
    assert_eq!(
        show("paste <<A <<B | bash\none\nA\ntwo\nB\necho after"),
        "(pipe (cmd paste <<[one\n] <<[two\n]) | (cmd bash)); (cmd echo after)"
    );
}

#[test]
fn a_here_document_inside_a_substitution_ends_inside_it() {
    assert_eq!(
        show("x=$(cat <<EOF\nbody\nEOF\n)\necho $x"),
        "(cmd x=$((cmd cat <<[body\n]))); (cmd echo ${x})"
    );
}

#[test]
fn here_strings_are_redirections_with_a_word() {
    assert_eq!(show("bash <<< \"curl $u | sh\""), "(cmd bash <<<\"curl ${u} | sh\")");
}

// ---- pipelines and lists -------------------------------------------------------------------------

#[test]
fn pipelines_and_lists() {
    assert_eq!(show("a | b |& c"), "(pipe (cmd a) | (cmd b) | (cmd c))");
    assert_eq!(show("! grep -q x f"), "(pipe ! (cmd grep -q x f))");
    assert_eq!(show("a && b || c"), "(list (cmd a) && (cmd b) || (cmd c))");
    assert_eq!(show("a; b & c\nd"), "(cmd a); (cmd b); (cmd c); (cmd d)");
    assert_eq!(show("a &&\n  b |\n  c"), "(list (cmd a) && (pipe (cmd b) | (cmd c)))");
}

#[test]
fn time_before_a_simple_command_is_a_word_and_before_a_compound_a_keyword() {
    assert_eq!(show("time curl x | sh"), "(pipe (cmd time curl x) | (cmd sh))");
    assert_eq!(show("time { a; }"), "(group (cmd a))");
}

// ---- compound commands ---------------------------------------------------------------------------

#[test]
fn groups_and_subshells() {
    assert_eq!(show("{ a; b; }"), "(group (cmd a); (cmd b))");
    assert_eq!(show("( cd /tmp && ls )"), "(subshell (list (cmd cd /tmp) && (cmd ls)))");
    assert_eq!(show("{ echo }; }"), "(group (cmd echo }))");
}

#[test]
fn if_elif_else() {
    assert_eq!(
        show("if [ -f x ]; then a; elif b; then c\nelse d; fi"),
        "(if (cmd [ -f x ]) then (cmd a) elif (cmd b) then (cmd c) else (cmd d))"
    );
}

#[test]
fn while_and_until_loops() {
    assert_eq!(
        show("while true; do sleep 1; done"),
        "(while (cmd true) do (cmd sleep 1))"
    );
    assert_eq!(show("until false\ndo\n  x\ndone"), "(until (cmd false) do (cmd x))");
}

#[test]
fn for_and_select_loops() {
    assert_eq!(
        show("for f in a \"b c\" $d; do rm $f; done"),
        "(for f in a \"b c\" ${d} do (cmd rm ${f}))"
    );
    assert_eq!(show("for f\ndo echo $f\ndone"), "(for f do (cmd echo ${f}))");
    assert_eq!(show("for f in *.txt\ndo :; done"), "(for f in *.txt do (cmd :))");
    assert_eq!(
        show("select x in a b; do break; done"),
        "(select x in a b do (cmd break))"
    );
    assert_eq!(
        show("for ((i = $n; i > 0; i--)); do echo; done"),
        "(for ((${n})) do (cmd echo))"
    );
    assert_eq!(show("for ((;;)) { a; }"), "(for (()) do (cmd a))");
}

#[test]
fn case_items_with_patterns_and_terminators() {
    assert_eq!(
        show("case \"$1\" in\n  start|up) run ;;\n  (stop) halt ;&\n  *.sh) x ;;&\n  *) ;;\nesac"),
        "(case \"${1}\" in start|up) (cmd run) ;; stop) (cmd halt) ;; *.sh) (cmd x) ;; *) )"
    );
    assert_eq!(show("case $x in @(a|b)) y;; esac"), "(case ${x} in @(a|b)) (cmd y))");
    assert_eq!(
        show("x=$(case $y in a) echo 1;; esac)"),
        "(cmd x=$((case ${y} in a) (cmd echo 1))))"
    );
}

#[test]
fn function_definitions_in_each_form() {
    assert_eq!(show("f() { echo $1; }"), "(function f (group (cmd echo ${1})))");
    assert_eq!(show("function g { :; }"), "(function g (group (cmd :)))");
    assert_eq!(
        show("function h() ( cd /; ls )"),
        "(function h (subshell (cmd cd /); (cmd ls)))"
    );
    assert_eq!(show("k () {\n  a\n} > log"), "(function k (group (cmd a)) >log)");
    assert_eq!(
        show(":(){ :|:& };:"),
        "(function : (group (pipe (cmd :) | (cmd :)))); (cmd :)"
    );
}

#[test]
fn double_bracket_tests_keep_their_words() {
    assert_eq!(show("[[ -f $x && $y == a* ]]"), "(test -f ${x} ${y} == a*)");
    assert_eq!(show("[[ $v =~ ^(a|b)[0-9]+$ ]]"), "(test ${v} ^(a|b)[0-9]+$)");
    assert_eq!(
        show("[[ ! ( $a < $b ) ]] && echo"),
        "(list (test ${a} ${b}) && (cmd echo))"
    );
}

#[test]
fn declarations_take_assignments_and_words() {
    assert_eq!(show("export A=b C"), "(decl export A=b C)");
    assert_eq!(show("local -r x=\"$1\" y"), "(decl local -r x=\"${1}\" y)");
    assert_eq!(
        show("declare -a xs=(1 2) > /dev/null"),
        "(decl declare -a xs=(1 2) >/dev/null)"
    );
    assert_eq!(
        show("readonly R; typeset T=1; unset HISTFILE"),
        "(decl readonly R); (decl typeset T=1); (decl unset HISTFILE)"
    );
}

#[test]
fn coproc_runs_its_command() {
    assert_eq!(show("coproc nc -l 4444"), "(coproc (cmd nc -l 4444))");
    assert_eq!(show("coproc NAME { cat; }"), "(coproc (group (cmd cat)))");
}

// ---- errors and recovery -------------------------------------------------------------------------

#[test]
fn code_after_a_syntax_error_is_still_parsed() {
    let source = "echo ok\nif then fi )\ncurl http://x | sh\n";
    let parsed = script(source);
    assert!(!parsed.errors.is_empty());
    let shown = Show {
        source,
        script: &parsed,
    }
    .list(&parsed.body);
    assert!(shown.ends_with("(pipe (cmd curl http://x) | (cmd sh))"), "{shown}");
}

#[test]
fn unterminated_constructs_end_at_the_end_of_the_input() {
    for source in [
        "echo 'open",
        "echo \"open $x",
        "echo $(curl x",
        "echo ${x:-",
        "echo `id",
        "echo $'\\x41",
        "echo $((1 +",
        "cat <<EOF\nno end",
        "cat <<EOF",
        "if true; then echo",
        "case x in a) b",
        "f() {",
        "a=(1 2",
        "[[ -f x",
        "while true; do",
    ] {
        let parsed = script(source);
        assert!(!parsed.errors.is_empty(), "{source:?} parsed without an error");
    }
    assert_eq!(
        errors("echo ok\necho 'open\nmore"),
        vec![(2, "unterminated single quote")]
    );
}

#[test]
fn stray_closers_are_errors_and_skipped() {
    assert_eq!(errors("fi\necho a"), vec![(1, "unexpected keyword")]);
    assert_eq!(errors("echo a )\necho b"), vec![(1, "unexpected `)`")]);
    assert_eq!(errors(";; echo"), vec![(1, "unexpected `;`")]);
}

#[test]
fn nesting_past_the_limit_stops_the_parse_there() {
    let deep = format!("echo {}x{}\necho after\n", "$(".repeat(300), ")".repeat(300));
    let parsed = script(&deep);
    assert!(parsed.too_deep_at.is_some());
    let shallow = format!("echo {}x{}\n", "$(".repeat(100), ")".repeat(100));
    assert!(script(&shallow).too_deep_at.is_none());
}

#[test]
fn a_budget_spent_stops_the_parse() {
    let mut budget = Budget::new(Duration::ZERO);
    let source = "echo a\n".repeat(10_000);
    let stopped = parse(&source, 256, &mut budget).expect_err("no budget");
    assert!(stopped.parsed_to < source.len());
}

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
    let mut budget = Budget::new(Duration::from_secs(10));
    let parsed = parse(source, max_depth, &mut budget).expect("within budget");
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

// ---- speed ---------------------------------------------------------------------------------------

/// The 200-line file of `assess-bench` (generated-200-lines.sh).
fn generated_200_lines() -> String {
    let mut shell = String::from("#!/bin/bash\nset -euo pipefail\nOUT=\"${OUT:-./out}\"\nmkdir -p \"$OUT\"\n");
    let mut i = 0;
    while shell.lines().count() < 200 {
        shell.push_str(&format!(
            "for f in data/part{i}_*.csv; do\n  lines=$(wc -l < \"$f\")\n  if [ \"$lines\" -gt 1 ]; then\n    cut -d, -f1,3 \"$f\" | sort | uniq -c > \"$OUT/$(basename \"$f\" .csv).counts\"\n  fi\ndone\ncurl -fsS --max-time 10 -o \"$OUT/ref{i}.json\" https://api.example.com/ref/{i}\ngrep -c error \"$OUT/ref{i}.json\" || true\n"
        ));
        i += 1;
    }
    shell.lines().take(200).collect::<Vec<_>>().join("\n") + "\n"
}

/// `cargo test --release -p airlock-assessor --lib parse_speed -- --ignored --nocapture`
#[test]
#[ignore]
fn parse_speed_on_the_generated_200_line_file() {
    let source = generated_200_lines();
    let runs = 2000;
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let mut budget = Budget::new(Duration::from_secs(10));
            let started = std::time::Instant::now();
            let parsed = parse(&source, 256, &mut budget);
            let elapsed = started.elapsed();
            assert!(parsed.is_ok());
            elapsed
        })
        .collect();
    times.sort();
    println!(
        "{} bytes parsed in {:?} (median of {runs})",
        source.len(),
        times[runs / 2]
    );
}
