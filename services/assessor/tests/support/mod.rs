//! What the pass-by-pass tests share: the built-in engine's view of code from outside.
// Each test file is a crate of its own, and not every one uses every helper.
#![allow(dead_code)]

use airlock_assessor::Engine;
use airlock_protocol::assessment::{Assessment, Level};
use airlock_protocol::request::{Language, Origin};

/// `code` as external code, under the built-in rules.
pub fn assess(code: &str, language: Language) -> Assessment {
    Engine::builtin()
        .expect("built-in rules load")
        .assess(code.as_bytes(), language, Origin::External)
}

pub fn ids(a: &Assessment) -> Vec<&str> {
    a.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

pub fn py(code: &str) -> Assessment {
    assess(code, Language::Python)
}

pub fn sh(code: &str) -> Assessment {
    assess(code, Language::Bash)
}

/// A benign twin stays as it was: at most MEDIUM, and read.
pub fn benign(a: &Assessment) {
    assert!(a.level <= Level::Medium, "{:?} {}", ids(a), a.summary);
    assert!(!a.unanalysed, "{:?} {}", ids(a), a.summary);
}
