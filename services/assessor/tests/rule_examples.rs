//! Every rule's own examples: `examples.match` must produce the rule's finding, `examples.no_match`
//! must not. A rule file cannot be added without examples (the loader refuses it), so this test
//! covers every rule.

use airlock_assessor::Engine;
use airlock_protocol::request::Origin;

#[test]
fn every_rule_matches_its_examples_and_only_them() {
    let engine = Engine::builtin().expect("built-in rules load");
    let mut failures = Vec::new();
    let mut checked = 0;
    for rule in &engine.rules().rules {
        for examples in std::iter::once(&rule.examples).chain(rule.more_examples.iter()) {
            let language = examples.language.unwrap_or(rule.languages[0]);
            for example in &examples.matching {
                checked += 1;
                let assessment = engine.assess(example.as_bytes(), language, Origin::External);
                if !assessment.findings.iter().any(|f| f.rule_id == rule.id) {
                    let found: Vec<&str> = assessment.findings.iter().map(|f| f.rule_id.as_str()).collect();
                    failures.push(format!("{} should match {example:?} (found {found:?})", rule.id));
                }
            }
            for example in &examples.no_match {
                checked += 1;
                let assessment = engine.assess(example.as_bytes(), language, Origin::External);
                if assessment.findings.iter().any(|f| f.rule_id == rule.id) {
                    failures.push(format!("{} should not match {example:?}", rule.id));
                }
            }
        }
    }
    assert!(checked > 200, "only {checked} examples: are the rule files loaded?");
    assert!(
        failures.is_empty(),
        "{} of {checked} examples failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
