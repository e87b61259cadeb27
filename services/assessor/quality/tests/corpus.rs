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
    let report = collections(&quality::SECOND_ROUND);
    let per_behaviour = risky_per_group(&report);
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
    assert_floors(
        &report,
        [
            TRAINING_RECALL_FLOOR,
            VALIDATION_RECALL_FLOOR,
            TRAINING_FALSE_ALARM_CEILING,
            VALIDATION_FALSE_ALARM_CEILING,
        ],
    );
}

// Measured 2026-11-23 with the behaviour rules: training 311/311 caught, 0/236 false alarms;
// validation 133/141 caught, 2/111 false alarms. (Before them: 55% caught, 6.6% / 4.5%.)
const TRAINING_RECALL_FLOOR: f64 = 0.95;
const VALIDATION_RECALL_FLOOR: f64 = 0.90;
const TRAINING_FALSE_ALARM_CEILING: f64 = 0.02;
const VALIDATION_FALSE_ALARM_CEILING: f64 = 0.03;

/// Issue 26's collections (tool fallback, local data leaving, intent idioms, what the assessor
/// cannot follow): written before their rules, a third kept aside. Regression floors from a
/// measured run; `assess-bench --judgement` prints the figures.
#[test]
fn third_round_collections_stay_above_their_floors() {
    let report = collections(&quality::THIRD_ROUND);
    let per_group = risky_per_group(&report);
    assert_eq!(per_group.len(), 8, "four groups in two languages: {per_group:?}");
    for ((group, language), risky) in &per_group {
        assert!(*risky >= 30, "{group} in {language} has {risky} risky cases");
    }
    assert_floors(
        &report,
        [
            THIRD_TRAINING_RECALL_FLOOR,
            THIRD_VALIDATION_RECALL_FLOOR,
            THIRD_FALSE_ALARM_CEILING,
            THIRD_FALSE_ALARM_CEILING,
        ],
    );
}

// Measured 2026-11-27 with issue 26's rules: training 171/182 caught, 0/62 false alarms;
// validation 74/85 caught, 0/30 false alarms. (Before them: 73/182 and 36/85.) After the sixth
// pass (2026-12-02): training 178/182, validation 76/85, no false alarm.
const THIRD_TRAINING_RECALL_FLOOR: f64 = 0.90;
const THIRD_VALIDATION_RECALL_FLOOR: f64 = 0.82;
const THIRD_FALSE_ALARM_CEILING: f64 = 0.05;

/// Issue 26's sixth pass: fresh cases of the same groups, written before the pass read or
/// changed a rule, a third kept aside. Regression floors from a measured run.
#[test]
fn sixth_pass_fresh_cases_stay_above_their_floors() {
    let report = collections(&quality::SIXTH_PASS);
    let per_group = risky_per_group(&report);
    assert_eq!(per_group.len(), 8, "four groups in two languages: {per_group:?}");
    for ((group, language), risky) in &per_group {
        assert!(*risky >= 15, "{group} in {language} has {risky} risky cases");
    }
    assert_floors(
        &report,
        [
            SIXTH_TRAINING_RECALL_FLOOR,
            SIXTH_VALIDATION_RECALL_FLOOR,
            SIXTH_TRAINING_FALSE_ALARM_CEILING,
            SIXTH_VALIDATION_FALSE_ALARM_CEILING,
        ],
    );
}

// Measured 2026-12-02 with the sixth pass's rules: training 132/134 caught, 0/47 false alarms;
// validation 51/62 caught, 2/24 false alarms. (Before them: 119/134 and 1/47; 51/62 and 2/24.)
const SIXTH_TRAINING_RECALL_FLOOR: f64 = 0.95;
const SIXTH_VALIDATION_RECALL_FLOOR: f64 = 0.80;
const SIXTH_TRAINING_FALSE_ALARM_CEILING: f64 = 0.03;
const SIXTH_VALIDATION_FALSE_ALARM_CEILING: f64 = 0.10;

/// Issue 26's seventh pass: a second set of fresh cases, written before the pass read or changed
/// a rule, a third kept aside. Regression floors from a measured run.
#[test]
fn seventh_pass_fresh_cases_stay_above_their_floors() {
    let report = collections(&quality::SEVENTH_PASS);
    let per_group = risky_per_group(&report);
    assert_eq!(per_group.len(), 8, "four groups in two languages: {per_group:?}");
    for ((group, language), risky) in &per_group {
        assert!(*risky >= 30, "{group} in {language} has {risky} risky cases");
    }
    assert_floors(
        &report,
        [
            SEVENTH_TRAINING_RECALL_FLOOR,
            SEVENTH_VALIDATION_RECALL_FLOOR,
            SEVENTH_TRAINING_FALSE_ALARM_CEILING,
            SEVENTH_VALIDATION_FALSE_ALARM_CEILING,
        ],
    );
}

// Measured with the seventh pass's rules: training 237/239 caught, 1/70 false alarms;
// validation 100/116 caught, 0/31 false alarms. (Before them: 166/239 and 2/70; 82/116 and 0/31.)
const SEVENTH_TRAINING_RECALL_FLOOR: f64 = 0.97;
const SEVENTH_VALIDATION_RECALL_FLOOR: f64 = 0.84;
const SEVENTH_TRAINING_FALSE_ALARM_CEILING: f64 = 0.03;
const SEVENTH_VALIDATION_FALSE_ALARM_CEILING: f64 = 0.05;

use quality::{BehaviourReport, BehaviourScore, Split};

/// The collections of these behaviours, rated by the built-in engine.
fn collections(behaviours: &[&str]) -> BehaviourReport {
    let engine = Engine::builtin().unwrap();
    quality::evaluate_behaviours(&engine, &quality::assessor_corpus())
        .expect("collections load")
        .only(behaviours)
}

/// Risky cases per (behaviour, language), both splits together.
fn risky_per_group(report: &BehaviourReport) -> std::collections::BTreeMap<(String, &'static str), usize> {
    let mut per_group = std::collections::BTreeMap::new();
    for ((_, behaviour, language), score) in report.scores() {
        *per_group.entry((behaviour, language)).or_default() += score.risky;
    }
    per_group
}

/// Recall of each split at least its floor, false alarms of each at most its ceiling:
/// `[training recall, validation recall, training false alarms, validation false alarms]`.
fn assert_floors(
    report: &BehaviourReport,
    [training_recall, validation_recall, training_alarms, validation_alarms]: [f64; 4],
) {
    let validation = report.total(Split::Validation);
    let training = report.total(Split::Training);
    let rendered = format!(
        "{}\n{}",
        report.render(Split::Training),
        report.render(Split::Validation)
    );
    let recall = |s: &BehaviourScore| s.caught as f64 / s.risky.max(1) as f64;
    let alarms = |s: &BehaviourScore| s.false_alarms as f64 / s.benign.max(1) as f64;
    assert!(recall(&training) >= training_recall, "{rendered}");
    assert!(recall(&validation) >= validation_recall, "{rendered}");
    assert!(alarms(&training) <= training_alarms, "{rendered}");
    assert!(alarms(&validation) <= validation_alarms, "{rendered}");
}
