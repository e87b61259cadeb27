//! Each construct, as a tree, and the errors of broken code.

use super::*;

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
    struct Spent;
    impl crate::Budget for Spent {
        fn exhausted(&mut self) -> bool {
            true
        }
    }
    let mut budget = Spent;
    let source = "echo a\n".repeat(10_000);
    let stopped = parse(&source, 256, &mut budget).expect_err("no budget");
    assert!(stopped.parsed_to < source.len());
}
