//! What the parser makes of each construct.

use super::ast::*;
use super::parse;
use crate::extract::Budget;
use std::time::Duration;

fn script(source: &str) -> Script {
    let mut budget = Budget::new(Duration::from_secs(10));
    parse(source, 256, &mut budget).expect("within budget")
}

#[test]
fn debug_dump() {
    let src = std::env::var("DUMP").unwrap_or_default();
    let s = script(&src);
    println!("{:#?}", s);
}

/// The 200-line file of `assess-bench` (generated-200-lines.sh).
fn generated_200_lines() -> String {
    let mut shell = String::from("#!/bin/bash\nset -euo pipefail\nOUT=\"${OUT:-./out}\"\nmkdir -p \"$OUT\"\n");
    let mut i = 0;
    while shell.lines().count() < 200 {
        shell.push_str(&format!(
            "for f in data/part{i}_*.csv; do\n  lines=$(wc -l < \"$f\")\n  if [ \"$lines\" -gt 1 ]; then\n    cut -d, -f1,3 \"$f\" | sort | uniq -c > \"$OUT/$(basename \"$f\" .csv).counts\"\n  fi\ndone\ncurl -fsS --max-time 10 -o \"$OUT/ref{i}.json\" https://api.example.com/ref/{i}\ngrep -c error \"$OUT/ref{i}.json\" || true\n"
        ));
        i += 1;
    }
    shell.lines().take(200).collect::<Vec<_>>().join("\n") + "\n"
}

/// `cargo test --release -p airlock-assessor --lib parse_speed -- --ignored --nocapture`
#[test]
#[ignore]
fn parse_speed_on_the_generated_200_line_file() {
    let source = generated_200_lines();
    let runs = 2000;
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let mut ours = Vec::new();
    for _ in 0..runs {
        let mut budget = Budget::new(Duration::from_secs(10));
        let started = std::time::Instant::now();
        let parsed = parse(&source, 256, &mut budget);
        ours.push(started.elapsed());
        assert!(parsed.is_ok());
    }
    let mut theirs = vec![Duration::ZERO];
    for _ in 0..runs * usize::from(std::env::var_os("OURS_ONLY").is_none()) {
        let mut budget = Budget::new(Duration::from_secs(10));
        let started = std::time::Instant::now();
        let tree = crate::treesitter::parse(airlock_protocol::request::Language::Bash, &source, &mut budget);
        theirs.push(started.elapsed());
        assert!(tree.is_some());
    }
    println!(
        "{} bytes: this parser {:?}, tree-sitter-bash {:?} (medians of {runs})",
        source.len(),
        median(ours),
        median(theirs)
    );
}
