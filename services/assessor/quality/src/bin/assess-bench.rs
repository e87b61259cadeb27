//! assess-bench: the assessor's speed against bandit on the same files in the same run, its
//! agreement with bandit per check id, and the confusion matrix of the labelled corpus.
//!
//! cargo build --release -p airlock-assessor-quality --bin assess-bench
//! target/release/assess-bench [--runs N] [--only NAME] [--no-bandit] [--corpora DIR]
//!
//! Prints Markdown (the assessor figures in docs/benchmarks.md come from it).

use airlock_assessor::Engine;
use airlock_assessor_quality::{self as quality, CheckScore};
use airlock_protocol::assessment::Category;
use airlock_protocol::request::{Language, Origin};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

struct Options {
    runs: usize,
    /// Time only files whose name contains this (quality reports still run).
    only: Option<String>,
    bandit: bool,
    corpora: PathBuf,
    /// The `airlock` binary, for the whole-corpus comparison as processes (default: beside this
    /// binary).
    airlock: Option<PathBuf>,
    /// Only the labelled corpus and the behaviour collections (no timing, no bandit).
    judgement_only: bool,
    /// False alarms on ordinary code: (group, language, file listing the paths).
    ordinary: Vec<(String, Language, PathBuf)>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        runs: 50,
        only: None,
        bandit: true,
        corpora: quality::shared_corpora(),
        airlock: std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("airlock")))
            .filter(|path| path.is_file()),
        judgement_only: false,
        ordinary: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => {
                options.runs = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or("--runs needs a positive number")?;
            }
            "--no-bandit" => options.bandit = false,
            "--judgement" => options.judgement_only = true,
            "--ordinary" => {
                // GROUP:LANGUAGE:LIST (LIST has one path a line).
                let spec = args.next().ok_or("--ordinary needs GROUP:LANGUAGE:LIST")?;
                let mut parts = spec.splitn(3, ':');
                let (Some(group), Some(language), Some(list)) = (parts.next(), parts.next(), parts.next()) else {
                    return Err("--ordinary needs GROUP:LANGUAGE:LIST".into());
                };
                let language = match language {
                    "python" => Language::Python,
                    "bash" => Language::Bash,
                    other => return Err(format!("--ordinary: language {other:?} is python or bash")),
                };
                options.ordinary.push((group.to_string(), language, list.into()));
            }
            "--only" => options.only = Some(args.next().ok_or("--only needs a file name part")?),
            "--corpora" => options.corpora = args.next().ok_or("--corpora needs a directory")?.into(),
            "--airlock" => options.airlock = Some(args.next().ok_or("--airlock needs a path")?.into()),
            other => {
                return Err(format!(
                    "unknown argument {other:?} (--runs N, --only NAME, --no-bandit, --judgement, --ordinary GROUP:LANGUAGE:LIST, --corpora DIR, --airlock PATH)"
                ));
            }
        }
    }
    Ok(options)
}

struct Subject {
    name: String,
    path: PathBuf,
    language: Language,
    code: Vec<u8>,
}

struct Timing {
    median: Duration,
    p99: Duration,
    all: Vec<Duration>,
}

fn time_engine(engine: &Engine, subject: &Subject, runs: usize) -> Timing {
    // One warm-up run: the first parse of a process touches cold pages of the grammar tables.
    let _ = engine.assess(&subject.code, subject.language, Origin::External);
    let mut all: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let assessment = engine.assess(&subject.code, subject.language, Origin::External);
            std::hint::black_box(assessment);
            started.elapsed()
        })
        .collect();
    all.sort();
    Timing {
        median: percentile(&all, 50.0),
        p99: percentile(&all, 99.0),
        all,
    }
}

fn time_bandit(path: &Path) -> Option<Duration> {
    let started = Instant::now();
    let status = Command::new("bandit")
        .args(["-q", "-f", "json"])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    // bandit exits 1 when it reports issues; anything else means it did not run.
    matches!(status.code(), Some(0 | 1)).then(|| started.elapsed())
}

/// The bash parser (`airlock_bash_parser`) alone, without the walk and the rules.
fn time_bash_parser(subject: &Subject, runs: usize) -> Result<Timing, Box<dyn std::error::Error>> {
    let source = std::str::from_utf8(&subject.code)?;
    let mut all = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let parsed = airlock_bash_parser::parse(source, 256, &mut airlock_bash_parser::Unlimited);
        all.push(started.elapsed());
        if parsed.is_err() {
            return Err(format!("{} did not parse", subject.name).into());
        }
    }
    all.sort();
    Ok(Timing {
        median: percentile(&all, 50.0),
        p99: percentile(&all, 99.0),
        all,
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn micros(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e6)
}

fn generated_subjects(dir: &Path) -> std::io::Result<Vec<Subject>> {
    let mut subjects = Vec::new();
    for (name, language, code) in quality::generated_files() {
        let path = dir.join(name);
        std::fs::write(&path, &code)?;
        subjects.push(Subject {
            name: name.into(),
            path,
            language,
            code: code.into_bytes(),
        });
    }
    Ok(subjects)
}

/// The whole bandit corpus through one `airlock assess --json` process and through one `bandit
/// -r` process, alternated five times in this run: what a user of either command waits for.
fn whole_corpus_as_processes(
    airlock: &Path,
    dir: &Path,
    examples: &[Subject],
) -> Result<(), Box<dyn std::error::Error>> {
    let files: Vec<&Path> = examples.iter().map(|s| s.path.as_path()).collect();
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let status = Command::new(airlock)
            .args(["assess", "--json", "--lang", "python", "--origin", "external"])
            .args(&files)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        // Exit 1 and 4 say the worst rating (HIGH, BLOCKED); 2 would be unreadable files.
        if !matches!(status.code(), Some(0 | 1 | 4)) {
            return Err(format!("{} assess failed: {status}", airlock.display()).into());
        }
        ours.push(started.elapsed());
        let started = Instant::now();
        let status = Command::new("bandit")
            .args(["-q", "-f", "json", "-r"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !matches!(status.code(), Some(0 | 1)) {
            return Err(format!("bandit failed: {status}").into());
        }
        theirs.push(started.elapsed());
    }
    ours.sort();
    theirs.sort();
    let (ours, theirs) = (percentile(&ours, 50.0), percentile(&theirs, 50.0));
    println!();
    println!(
        "Whole corpus ({} files) as one process each, median of 5 alternated runs: `airlock assess --json` {:.1} ms, `bandit -r` {:.0} ms: {:.0}x.",
        files.len(),
        ours.as_secs_f64() * 1e3,
        theirs.as_secs_f64() * 1e3,
        theirs.as_secs_f64() / ours.as_secs_f64().max(1e-9)
    );
    Ok(())
}

/// A small script of each language rated by a fresh `airlock assess` process, the way a shell
/// tool or a hook calls it, with `airlock --version` (the process and binary alone) as the floor;
/// the three alternated, `runs` times each.
fn fresh_process_per_file(airlock: &Path, scratch: &Path, runs: usize) -> Result<(), Box<dyn std::error::Error>> {
    let python = scratch.join("small.py");
    std::fs::write(
        &python,
        "import json\nimport sys\nfrom pathlib import Path\n\n\ndef main(path):\n    rows = json.loads(Path(path).read_text())\n    \
         total = sum(row[\"amount\"] for row in rows)\n    Path(\"out\").mkdir(exist_ok=True)\n    \
         Path(\"out/total.txt\").write_text(f\"{total}\\n\")\n\n\nmain(sys.argv[1] if len(sys.argv) > 1 else \"input.json\")\n",
    )?;
    let bash = scratch.join("small.sh");
    std::fs::write(
        &bash,
        "#!/bin/bash\nset -euo pipefail\nmkdir -p archive\nfor f in logs/*.log; do\n  gzip -c \"$f\" > \"archive/$(basename \"$f\").gz\"\ndone\n\
         echo \"archived $(ls archive | wc -l) files\"\n",
    )?;
    let commands: [(&str, Vec<&std::ffi::OsStr>); 3] = [
        ("`airlock --version` (floor)", vec!["--version".as_ref()]),
        ("`airlock assess small.py`", vec!["assess".as_ref(), python.as_os_str()]),
        ("`airlock assess small.sh`", vec!["assess".as_ref(), bash.as_os_str()]),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); commands.len()];
    for run in 0..runs + 3 {
        for (i, (_, args)) in commands.iter().enumerate() {
            let started = Instant::now();
            let status = Command::new(airlock)
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
            if !matches!(status.code(), Some(0 | 1 | 4)) {
                return Err(format!("{} {args:?} failed: {status}", airlock.display()).into());
            }
            // The first three rounds warm the page cache and are not counted.
            if run >= 3 {
                times[i].push(started.elapsed());
            }
        }
    }
    println!();
    println!("A fresh process per file ({runs} alternated runs each):");
    println!();
    println!("| command | median | mean | min |");
    println!("|---|---|---|---|");
    for ((label, _), mut runs) in commands.iter().zip(times) {
        runs.sort();
        let mean = runs.iter().sum::<Duration>() / runs.len().max(1) as u32;
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
        println!(
            "| {label} | {} | {} | {} |",
            ms(percentile(&runs, 50.0)),
            ms(mean),
            ms(runs[0])
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("assess-bench: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("assess-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let loading = Instant::now();
    let engine = Engine::builtin()?;
    let loaded_in = loading.elapsed();
    if !options.ordinary.is_empty() {
        return ordinary_code(&engine, &options.ordinary);
    }
    if options.judgement_only {
        return judgement(&engine);
    }
    let examples_dir = options.corpora.join("bandit-examples");
    let baseline = quality::Baseline::load(&options.corpora.join("bandit-1.9.4-baseline.json"))?;
    let scratch = std::env::temp_dir().join(format!("assess-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;

    let mut examples = Vec::new();
    for file in quality::python_files(&examples_dir)? {
        let path = examples_dir.join(&file);
        examples.push(Subject {
            code: std::fs::read(&path)?,
            name: file,
            path,
            language: Language::Python,
        });
    }
    let generated = generated_subjects(&scratch)?;

    println!("# assess-bench");
    println!();
    println!(
        "rules {} · threats {} · {} runs per file (after one warm-up) · bandit: {}",
        engine.rules_version(),
        engine.threats_version(),
        options.runs,
        if options.bandit { "one run per file" } else { "not run" }
    );
    println!();
    println!(
        "Engine load (built-in rules, first in this process): {} µs.",
        micros(loaded_in)
    );
    println!();
    println!("## Speed per file");
    println!();
    println!("| file | bytes | assessor median µs | assessor p99 µs | bandit ms | bandit / assessor |");
    println!("|---|---|---|---|---|---|");
    let mut example_medians = Vec::new();
    let mut example_runs = Vec::new();
    let mut ratios = Vec::new();
    let mut bandit_times = Vec::new();
    for (group, subjects) in [("examples", &examples), ("generated", &generated)] {
        for subject in subjects.iter() {
            if options
                .only
                .as_ref()
                .is_some_and(|o| !subject.name.contains(o.as_str()))
            {
                continue;
            }
            let timing = time_engine(&engine, subject, options.runs);
            let bandit = if options.bandit {
                time_bandit(&subject.path)
            } else {
                None
            };
            let ratio = bandit.map(|b| b.as_secs_f64() / timing.median.as_secs_f64().max(1e-9));
            if group == "examples" {
                example_medians.push(timing.median);
                example_runs.extend(timing.all.iter().copied());
                if let (Some(b), Some(r)) = (bandit, ratio) {
                    bandit_times.push(b);
                    ratios.push(r);
                }
            }
            let show = group == "generated" || subjects.len() <= 10;
            if show || timing.median > Duration::from_millis(1) {
                println!(
                    "| {} | {} | {} | {} | {} | {} |",
                    subject.name,
                    subject.code.len(),
                    micros(timing.median),
                    micros(timing.p99),
                    bandit.map_or("-".into(), |b| format!("{:.0}", b.as_secs_f64() * 1e3)),
                    ratio.map_or("-".into(), |r| format!("{r:.0}x"))
                );
            }
        }
    }
    example_medians.sort();
    example_runs.sort();
    bandit_times.sort();
    ratios.sort_by(|a, b| a.total_cmp(b));
    println!();
    println!(
        "Bandit examples ({} files; rows above only for files whose median exceeds 1 ms): assessor median of per-file medians {} µs, p99 over all {} runs {} µs, slowest file median {} µs.",
        examples.len(),
        micros(percentile(&example_medians, 50.0)),
        example_runs.len(),
        micros(percentile(&example_runs, 99.0)),
        micros(example_medians.last().copied().unwrap_or_default()),
    );
    if !ratios.is_empty() {
        println!(
            "bandit on the same files: median {:.0} ms per file. Speed-up per file (bandit / assessor median): median {:.0}x, lowest {:.0}x.",
            percentile(&bandit_times, 50.0).as_secs_f64() * 1e3,
            ratios[ratios.len() / 2],
            ratios[0]
        );
    }

    if let Some(script) = generated.iter().find(|s| s.language == Language::Bash) {
        let timing = time_bash_parser(script, options.runs.max(2000))?;
        println!(
            "The bash parser alone on {} ({} bytes): median {} µs, p99 {} µs.",
            script.name,
            script.code.len(),
            micros(timing.median),
            micros(timing.p99)
        );
    }

    if let (true, Some(airlock)) = (options.bandit, &options.airlock) {
        whole_corpus_as_processes(airlock, &examples_dir, &examples)?;
    }
    if let Some(airlock) = &options.airlock {
        fresh_process_per_file(airlock, &scratch, options.runs.max(20))?;
    }

    println!();
    println!("## Agreement with bandit 1.9.4 per check id (file + line + id)");
    println!();
    let scores = quality::compare_with_bandit(&engine, &examples_dir, &baseline)?;
    println!("| check | bandit | assessor | agreed | recall | precision |");
    println!("|---|---|---|---|---|---|");
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.2}", v));
    for score in scores.iter().chain(std::iter::once(&quality::totals(&scores))) {
        let CheckScore {
            check,
            baseline,
            ours,
            agreed,
        } = score;
        println!(
            "| {check} | {baseline} | {ours} | {agreed} | {} | {} |",
            fmt(score.recall()),
            fmt(score.precision())
        );
    }

    judgement(&engine)?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// The labelled corpus and the behaviour collections of each round, training and validation
/// apart; misses are listed for the training split only (the validation split is not looked
/// at while rules are written).
fn judgement(engine: &Engine) -> Result<(), Box<dyn std::error::Error>> {
    println!();
    println!("## Labelled corpus (tests/assessor-corpus): confusion matrix by level");
    println!();
    let report = quality::evaluate_corpus(engine, &quality::assessor_corpus())?;
    let exact = report.outcomes.iter().filter(|o| o.actual == o.case.expected).count();
    println!("{} cases, {} rated as labelled.", report.outcomes.len(), exact);
    println!();
    print!("{}", report.render_confusion());
    for miss in report.mismatches() {
        println!(
            "- {} ({:?}, {:?}): expected {}, rated {}",
            miss.case.file, miss.case.language, miss.case.origin, miss.case.expected, miss.actual
        );
    }
    for (title, round) in [
        ("issue 10, second round", &quality::SECOND_ROUND[..]),
        ("issue 26, third round", &quality::THIRD_ROUND[..]),
        ("issue 26, sixth pass: fresh cases", &quality::SIXTH_PASS[..]),
        ("issue 26, seventh pass: fresh cases", &quality::SEVENTH_PASS[..]),
    ] {
        println!();
        println!("## Behaviour collections ({title}): training and validation splits");
        println!();
        let behaviours = quality::evaluate_behaviours(engine, &quality::assessor_corpus())?.only(round);
        for split in [quality::Split::Training, quality::Split::Validation] {
            print!("{}", behaviours.render(split));
            println!();
        }
        // Misses are listed for the training split only: the validation split is not looked
        // at while rules are written.
        for outcome in behaviours
            .outcomes
            .iter()
            .filter(|o| o.case.split == quality::Split::Training && !o.correct())
        {
            println!(
                "- training miss: {} {}/{} ({:?}): expected {}, rated {}",
                outcome.case.behaviour,
                outcome.case.language.as_str(),
                outcome.case.name,
                outcome.case.origin,
                outcome.case.expected,
                if outcome.unanalysed {
                    format!("{} (unanalysed)", outcome.actual)
                } else {
                    outcome.actual.to_string()
                }
            );
        }
    }
    Ok(())
}

/// False alarms on ordinary code: every file of each group rated as code from outside. A false
/// alarm is a rating of HIGH or above; beside it, how often a human would be asked: because the
/// assessor could not follow something (unanalysed), under the default policy (BLOCKED or
/// unanalysed), and under a policy that asks for external code from MEDIUM up.
fn ordinary_code(engine: &Engine, groups: &[(String, Language, PathBuf)]) -> Result<(), Box<dyn std::error::Error>> {
    println!("## False alarms on ordinary code (rated as external code)");
    println!();
    println!(
        "| group | language | files | HIGH or above | of them BLOCKED | unanalysed | a human asked, default policy (BLOCKED or unanalysed) | MEDIUM or above (asked where `external.medium = \"ask\"`) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut details = Vec::new();
    let mut asked_at = Vec::new();
    for (group, language, list) in groups {
        let paths: Vec<String> = std::fs::read_to_string(list)?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        let (mut files, mut high, mut blocked, mut asked) = (0usize, 0usize, 0usize, 0usize);
        let (mut asked_by_default, mut medium) = (0usize, 0usize);
        let mut rules: std::collections::BTreeMap<String, usize> = Default::default();
        for path in &paths {
            let Ok(code) = std::fs::read(path) else { continue };
            files += 1;
            let a = engine.assess(&code, *language, Origin::External);
            asked += usize::from(a.unanalysed);
            asked_by_default += usize::from(a.unanalysed || a.level == airlock_protocol::assessment::Level::Blocked);
            medium += usize::from(a.unanalysed || a.level >= airlock_protocol::assessment::Level::Medium);
            if a.unanalysed {
                for f in a.findings.iter().filter(|f| f.category == Category::Input) {
                    *rules.entry(format!("asked: {}", f.rule_id)).or_default() += 1;
                }
                // The first thing the assessor could not follow, to see what fires on ordinary code.
                if let Some(first) = a.findings.iter().find(|f| f.category == Category::Input) {
                    asked_at.push(format!(
                        "- asked: {group}: {path}:{}: {} `{}`",
                        first.line, first.rule_id, first.snippet
                    ));
                }
            }
            if a.level >= airlock_protocol::assessment::Level::High {
                high += 1;
                blocked += usize::from(a.level == airlock_protocol::assessment::Level::Blocked);
                let top: Vec<&str> = a
                    .findings
                    .iter()
                    .filter(|f| f.severity >= airlock_protocol::assessment::Level::High)
                    .map(|f| f.rule_id.as_str())
                    .collect();
                for id in &top {
                    *rules.entry((*id).to_string()).or_default() += 1;
                }
                details.push(format!("- {group}: {path}: {} {}", a.level, top.join(", ")));
            }
        }
        let pct = |n: usize| {
            if files == 0 {
                0.0
            } else {
                100.0 * n as f64 / files as f64
            }
        };
        println!(
            "| {group} | {} | {files} | {high} ({:.2}%) | {blocked} | {asked} ({:.2}%) | {asked_by_default} ({:.2}%) | {medium} ({:.2}%) |",
            language.as_str(),
            pct(high),
            pct(asked),
            pct(asked_by_default),
            pct(medium)
        );
        details.push(format!("- {group}: by rule: {rules:?}"));
    }
    println!();
    for line in details.iter().chain(&asked_at) {
        println!("{line}");
    }
    Ok(())
}
