//! Any bytes as a Python or a bash program, from either origin: the assessment never panics,
//! stays within its bounds, and says how far it could parse.
#![no_main]
use airlock_assessor::Engine;
use airlock_assessor::engine::{MAX_EXPLANATION_CHARS, MAX_FINDINGS, MAX_SNIPPET_CHARS};
use airlock_protocol::assessment::ParseStatus;
use airlock_protocol::request::{Language, Origin};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::builtin().expect("the built-in rules load"))
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the language and the origin.
    let Some((&choice, code)) = data.split_first() else {
        return;
    };
    let language = if choice & 1 == 0 { Language::Python } else { Language::Bash };
    let origin = if choice & 2 == 0 { Origin::External } else { Origin::Generated };
    let assessment = engine().assess(code, language, origin);
    assert!(assessment.findings.len() <= MAX_FINDINGS);
    for finding in &assessment.findings {
        assert!(finding.snippet.chars().count() <= MAX_SNIPPET_CHARS);
        assert!(finding.explanation.chars().count() <= MAX_EXPLANATION_CHARS);
    }
    if let ParseStatus::Partial { error_count, first_error_line } = assessment.parse {
        assert!(error_count > 0 && first_error_line > 0);
    }
});
