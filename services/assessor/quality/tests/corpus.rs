//! The labelled corpus (tests/assessor-corpus) and agreement with bandit's baseline
//! (../shared/corpora). Thresholds here are floors that catch regressions; the benchmark
//! binary reports the exact figures.

use airlock_assessor::Engine;
use airlock_assessor_quality as quality;
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

/// The behaviour collections of issue 10: every behaviour has at least 20 risky cases in each
/// language, a third kept aside as validation, and both splits stay above their floors. The
/// floors are regression floors set from a measured run; `assess-bench` prints the figures.
#[test]
fn behaviour_collections_stay_above_their_floors() {
    use quality::Split;
    let engine = Engine::builtin().unwrap();
    let report = quality::evaluate_behaviours(&engine, &quality::assessor_corpus())
        .expect("collections load")
        .only(&quality::SECOND_ROUND);
    let scores = report.scores();
    let mut per_behaviour: std::collections::BTreeMap<(String, &str), usize> = Default::default();
    for ((_, behaviour, language), score) in &scores {
        *per_behaviour.entry((behaviour.clone(), language)).or_default() += score.risky;
    }
    assert_eq!(
        per_behaviour.len(),
        20,
        "ten behaviours in two languages: {per_behaviour:?}"
    );
    for ((behaviour, language), risky) in &per_behaviour {
        assert!(*risky >= 20, "{behaviour} in {language} has {risky} risky cases");
    }
    let validation = report.total(Split::Validation);
    let training = report.total(Split::Training);
    assert!(
        validation.risky * 4 >= (validation.risky + training.risky),
        "the validation split holds about a third"
    );
    let rendered = format!(
        "{}\n{}",
        report.render(Split::Training),
        report.render(Split::Validation)
    );
    let recall = |s: &quality::BehaviourScore| s.caught as f64 / s.risky.max(1) as f64;
    let alarms = |s: &quality::BehaviourScore| s.false_alarms as f64 / s.benign.max(1) as f64;
    assert!(recall(&training) >= TRAINING_RECALL_FLOOR, "{rendered}");
    assert!(recall(&validation) >= VALIDATION_RECALL_FLOOR, "{rendered}");
    assert!(alarms(&training) <= TRAINING_FALSE_ALARM_CEILING, "{rendered}");
    assert!(alarms(&validation) <= VALIDATION_FALSE_ALARM_CEILING, "{rendered}");
}

// Measured 2026-11-23 with the behaviour rules: training 311/311 caught, 0/236 false alarms;
// validation 133/141 caught, 2/111 false alarms. (Before them: 55% caught, 6.6% / 4.5%.)
const TRAINING_RECALL_FLOOR: f64 = 0.95;
const VALIDATION_RECALL_FLOOR: f64 = 0.90;
const TRAINING_FALSE_ALARM_CEILING: f64 = 0.02;
const VALIDATION_FALSE_ALARM_CEILING: f64 = 0.03;
