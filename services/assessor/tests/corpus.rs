//! The labelled corpus (tests/assessor-corpus) and agreement with bandit's baseline
//! (../shared/corpora). Thresholds here are floors that catch regressions; the benchmark
//! binary reports the exact figures.

use airlock_assessor::Engine;
use airlock_assessor::quality;
use airlock_protocol::assessment::Level;

#[test]
fn every_corpus_case_gets_its_labelled_level() {
    let engine = Engine::builtin().unwrap();
    let report = quality::evaluate_corpus(&engine, &quality::assessor_corpus()).expect("corpus loads");
    assert!(
        report.outcomes.len() >= 100,
        "corpus has {} cases",
        report.outcomes.len()
    );
    let misses: Vec<String> = report
        .mismatches()
        .map(|m| {
            format!(
                "{}: expected {}, rated {}\n{}",
                m.case.file, m.case.expected, m.actual, m.summary
            )
        })
        .collect();
    assert!(
        misses.is_empty(),
        "{}\n{}",
        misses.join("\n\n"),
        report.render_confusion()
    );
}

#[test]
fn benign_corpus_code_never_rates_high() {
    let engine = Engine::builtin().unwrap();
    let report = quality::evaluate_corpus(&engine, &quality::assessor_corpus()).unwrap();
    let benign: Vec<_> = report
        .outcomes
        .iter()
        .filter(|o| o.case.file.starts_with("benign/"))
        .collect();
    assert!(benign.len() >= 40);
    for outcome in benign {
        assert!(
            outcome.actual <= Level::Medium,
            "{} rated {}",
            outcome.case.file,
            outcome.actual
        );
    }
}

#[test]
fn agreement_with_bandit_stays_above_its_floor() {
    let engine = Engine::builtin().unwrap();
    let corpora = quality::shared_corpora();
    let baseline = quality::Baseline::load(&corpora.join("bandit-1.9.4-baseline.json"))
        .expect("the shared corpora (../shared/corpora, or $AIRLOCK_CORPORA) are present");
    let scores = quality::compare_with_bandit(&engine, &corpora.join("bandit-examples"), &baseline).unwrap();
    let total = quality::totals(&scores);
    let recall = total.recall().unwrap_or(0.0);
    let precision = total.precision().unwrap_or(0.0);
    assert!(recall >= 0.90, "recall {recall:.2}");
    assert!(precision >= 0.80, "precision {precision:.2}");
    let covered = scores.iter().filter(|s| s.baseline > 0 && s.agreed > 0).count();
    let checks = scores.iter().filter(|s| s.baseline > 0).count();
    assert!(
        covered + 2 >= checks,
        "{covered} of {checks} bandit checks matched at least once"
    );
}
