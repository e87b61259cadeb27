//! Temporary differential check: the tree-sitter walker against the new parser's, on every
//! file in $DIFF_INPUTS. Run alone: `DIFF_INPUTS=/tmp/diffinputs cargo test -p airlock-assessor
//! --lib differential -- --ignored --nocapture --test-threads=1`.

use crate::extract::{Budget, Context};
use crate::facts::{Expr, Facts, Value};
use airlock_protocol::request::{Language, Origin};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn value(e: &Expr) -> String {
    let kind = match &e.value {
        Value::Str(_) => "S",
        Value::Formatted(_) => "F",
        Value::Other => "O",
        _ => "?",
    };
    let trail = e.trail.as_ref().map(|t| t.render()).unwrap_or_default();
    format!(
        "{kind}{:?}t{}{}",
        e.text().unwrap_or_default(),
        e.taints.0,
        if trail.is_empty() {
            String::new()
        } else {
            format!("[{trail}]")
        }
    )
}

fn dump(facts: &Facts, out: &mut Vec<String>, tag: &str) {
    for c in &facts.calls {
        out.push(format!(
            "{tag} call {} args=[{}] flags={:?} t={} from={:?} to={:?} via={:?} @{}:{}",
            c.name,
            c.args.iter().map(value).collect::<Vec<_>>().join(", "),
            c.flags,
            c.taints.0,
            c.pipe_from,
            c.pipe_to,
            c.via,
            c.span.line,
            c.span.column
        ));
    }
    for s in &facts.strings {
        out.push(format!(
            "{tag} str {:?} f={} @{}:{}",
            s.text, s.formatted, s.span.line, s.span.column
        ));
    }
    for b in &facts.bindings {
        out.push(format!(
            "{tag} bind {} = {} @{}:{}",
            b.target,
            value(&b.value),
            b.span.line,
            b.span.column
        ));
    }
}

fn facts(rules: &crate::rules::RuleSet, language: Language, code: &str, old: bool) -> Vec<String> {
    crate::shell_old::USE_OLD.store(old, Ordering::Relaxed);
    let mut ctx = Context::new(rules, Budget::new(Duration::from_secs(5)), 256);
    let parsed = ctx.extract(language, code, None);
    let mut out = vec![format!("parse ok={} deep={}", parsed.is_some(), ctx.too_deep)];
    dump(&ctx.shell, &mut out, "sh");
    dump(&ctx.python, &mut out, "py");
    crate::shell_old::USE_OLD.store(false, Ordering::Relaxed);
    out
}

fn findings(engine: &crate::Engine, language: Language, code: &str, old: bool) -> (String, Vec<String>) {
    crate::shell_old::USE_OLD.store(old, Ordering::Relaxed);
    let a = engine.assess(code.as_bytes(), language, Origin::External);
    crate::shell_old::USE_OLD.store(false, Ordering::Relaxed);
    let list = a
        .findings
        .iter()
        .map(|f| {
            format!(
                "{} @{}:{} {}",
                f.rule_id,
                f.line,
                f.column,
                f.explanation.chars().take(300).collect::<String>()
            )
        })
        .collect();
    (format!("{:?}", a.level), list)
}

fn multiset_diff(old: &[String], new: &[String]) -> (Vec<String>, Vec<String>) {
    let mut a: Vec<&String> = old.iter().collect();
    let mut b: Vec<&String> = new.iter().collect();
    a.sort();
    b.sort();
    let (mut only_old, mut only_new) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if j >= b.len() || (i < a.len() && a[i] < b[j]) {
            only_old.push(a[i].clone());
            i += 1;
        } else if i >= a.len() || b[j] < a[i] {
            only_new.push(b[j].clone());
            j += 1;
        } else {
            i += 1;
            j += 1;
        }
    }
    (only_old, only_new)
}

#[test]
#[ignore]
fn differential() {
    let dir = std::env::var("DIFF_INPUTS").expect("DIFF_INPUTS");
    let engine = crate::Engine::builtin().unwrap();
    let only = std::env::var("DIFF_ONLY").ok();
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let (mut same, mut facts_differ, mut findings_differ, mut level_differ, mut val_facts, mut val_findings) =
        (0, 0, 0, 0, 0, 0);
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(only) = &only
            && !name.contains(only.as_str())
        {
            continue;
        }
        let validation = name.contains("_VAL_");
        let Ok(code) = std::fs::read_to_string(&path) else {
            continue;
        };
        let language = if name.ends_with(".py") {
            Language::Python
        } else {
            Language::Bash
        };
        let old = facts(engine.rules(), language, &code, true);
        let new = facts(engine.rules(), language, &code, false);
        let (old_level, old_findings) = findings(&engine, language, &code, true);
        let (new_level, new_findings) = findings(&engine, language, &code, false);
        let (fo, fn_) = multiset_diff(&old, &new);
        let (go, gn) = multiset_diff(&old_findings, &new_findings);
        if fo.is_empty() && fn_.is_empty() && go.is_empty() && gn.is_empty() {
            same += 1;
            continue;
        }
        if !fo.is_empty() || !fn_.is_empty() {
            facts_differ += 1;
        }
        if !go.is_empty() || !gn.is_empty() {
            findings_differ += 1;
        }
        if old_level != new_level {
            level_differ += 1;
        }
        if validation {
            val_facts += usize::from(!fo.is_empty() || !fn_.is_empty());
            val_findings += usize::from(!go.is_empty() || !gn.is_empty());
            if old_level != new_level {
                println!("== VALIDATION case {name}: level {old_level} -> {new_level}");
            }
            continue;
        }
        println!("== {name}  level {old_level} -> {new_level}");
        if std::env::var("DIFF_CODE").is_ok() {
            println!("{code}");
        }
        for l in &fo {
            println!("  - {l}");
        }
        for l in &fn_ {
            println!("  + {l}");
        }
        for l in &go {
            println!("  F- {l}");
        }
        for l in &gn {
            println!("  F+ {l}");
        }
    }
    println!(
        "\nsame {same}, facts differ {facts_differ}, findings differ {findings_differ}, level differs {level_differ}; of which validation: facts {val_facts}, findings {val_findings}"
    );
}
