//! Docs that cannot drift: every `airlock ...` command line in the docs' shell blocks parses
//! with this CLI's own parser, and every TOML block of the docs is read the way `airlock up`
//! reads `airlock.toml` without an unknown section or key. A renamed flag or config key fails
//! here, naming the file and line, instead of misleading an operator.

use std::path::{Path, PathBuf};

/// The documents users follow.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md"), root.join("clients/python/README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// A fenced code block: its language, and its lines with their line numbers.
struct Block {
    language: String,
    lines: Vec<(usize, String)>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(fence) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(block) => found.push(block),
                None => {
                    open = Some(Block {
                        language: fence.trim().to_owned(),
                        lines: Vec::new(),
                    })
                }
            }
        } else if let Some(block) = &mut open {
            block.lines.push((number + 1, line.to_owned()));
        }
    }
    found
}

/// The `airlock` invocations of one shell line, as argument lists (`airlock` first); `None`
/// for segments that cannot be read without a shell (substitutions).
fn invocations(line: &str) -> Vec<Vec<String>> {
    let line = line.trim().trim_start_matches("$ ");
    let mut found = Vec::new();
    for segment in line.split(['|', ';']).flat_map(|s| s.split("&&")) {
        // A trailing comment, a background `&`, redirections.
        let segment = segment
            .split(" #")
            .next()
            .unwrap_or_default()
            .trim()
            .trim_end_matches('&');
        let segment = segment.split(['>', '<']).next().unwrap_or_default().trim();
        if segment.contains("$(") || segment.contains('`') {
            continue;
        }
        let Some(words) = shlex::split(segment) else { continue };
        let start = words
            .iter()
            .position(|w| w == "airlock" || w.ends_with("/airlock") || w == "$airlock" || w == "\"$airlock\"");
        let Some(start) = start else { continue };
        // Only where the command begins a segment (after environment assignments).
        if !words[..start].iter().all(|w| w.contains('=') && !w.starts_with('-')) {
            continue;
        }
        let mut args: Vec<String> = words[start..].to_vec();
        args[0] = "airlock".to_owned();
        // Placeholders stand for values: `<ID>`, `$RID`, `...`.
        for arg in &mut args[1..] {
            if arg.starts_with('$') || (arg.starts_with('<') && arg.ends_with('>')) {
                *arg = "placeholder".to_owned();
            }
        }
        if args.iter().any(|a| a == "..." || a.contains('…')) {
            continue;
        }
        found.push(args);
    }
    found
}

#[test]
fn every_airlock_command_line_in_the_docs_parses() {
    use clap::Parser as _;
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("a doc");
        for block in blocks(&text) {
            if !matches!(block.language.as_str(), "sh" | "bash" | "shell" | "console" | "") {
                continue;
            }
            for (number, line) in &block.lines {
                for args in invocations(line) {
                    // `airlock bench` exists only in builds with the `bench` feature.
                    if cfg!(not(feature = "bench")) && args.get(1).is_some_and(|a| a == "bench") {
                        continue;
                    }
                    checked += 1;
                    if let Err(error) = crate::Cli::try_parse_from(&args) {
                        use clap::error::ErrorKind;
                        if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                            continue;
                        }
                        let first = error.to_string().lines().next().unwrap_or_default().to_owned();
                        wrong.push(format!("{}:{number}: `{}`: {first}", file.display(), line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        checked >= 15,
        "only {checked} command lines found: is the block reader broken?"
    );
    assert!(
        wrong.is_empty(),
        "{} doc command lines do not parse:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn every_toml_block_in_the_docs_has_only_known_sections_and_keys() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("a doc");
        for block in blocks(&text) {
            if block.language != "toml" {
                continue;
            }
            let body: String = block.lines.iter().map(|(_, l)| format!("{l}\n")).collect();
            let Some((first, _)) = block.lines.first() else {
                continue;
            };
            // A block that is not TOML on its own (a fragment with placeholders) says nothing
            // about key names.
            let Ok(table) = toml::from_str::<toml::Table>(&body) else {
                continue;
            };
            // Top-level arrays of tables (`[[tool]]`, `[[api]]`) are the assessor's rule files,
            // not airlock.toml.
            if table.values().any(toml::Value::is_array) {
                continue;
            }
            checked += 1;
            if let Some(said) = unknown_in(&body) {
                wrong.push(format!("{}:{first}: {said}", file.display()));
            }
        }
    }
    assert!(
        checked >= 5,
        "only {checked} TOML blocks found: is the block reader broken?"
    );
    assert!(
        wrong.is_empty(),
        "{} doc TOML blocks name unknown settings:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The settings the docs' tables name: (line, section, dotted key) for every backticked
/// key in the first column of a table under a heading that names a section (`## \`[executor]\``).
fn table_keys(text: &str) -> Vec<(usize, String, String)> {
    let mut found = Vec::new();
    let mut section: Option<String> = None;
    let mut key_table: Option<bool> = None;
    for (number, line) in text.lines().enumerate() {
        if line.starts_with('#') {
            section = backticked(line)
                .into_iter()
                .find_map(|t| t.strip_prefix('[').and_then(|t| t.strip_suffix(']')).map(str::to_owned))
                .filter(|s| !s.contains('<'));
            continue;
        }
        let Some(row) = line.strip_prefix('|') else {
            key_table = None;
            continue;
        };
        let first = row.split('|').next().unwrap_or_default();
        // A table's header row says whether its first column is settings (`| key | ...`).
        let is_key_table = *key_table.get_or_insert_with(|| first.trim() == "key");
        let Some(section) = section.as_ref().filter(|_| is_key_table) else {
            continue;
        };
        let keys = backticked(first);
        // `[gate] operators_dir`, `[people.<name>] matrix, slack`: said with their own section.
        if keys.first().is_some_and(|k| k.starts_with('[')) {
            continue;
        }
        for key in keys {
            if key.contains(' ') || key.contains('<') {
                continue;
            }
            found.push((number + 1, section.clone(), key.to_owned()));
        }
    }
    found
}

fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Whether `airlock up` would refuse `section.key` as unknown (any value: a known key with a
/// value of the wrong type is a different error).
fn unknown_setting(section: &str, key: &str) -> Option<String> {
    let (tables, name) = match key.rsplit_once('.') {
        Some((inner, name)) => (format!("{section}.{inner}"), name),
        None => (section.to_owned(), key),
    };
    unknown_in(&format!("[{tables}]\n{name} = 0\n"))
}

/// What `airlock up`'s check says of `config` as airlock.toml, if it names an unknown section
/// or key. Only names: other errors (values, paths, keys in examples) are not drift.
fn unknown_in(config: &str) -> Option<String> {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::write(home.path().join("airlock.toml"), config).expect("config");
    let home = crate::home::Home::locate(Some(home.path().to_owned())).expect("home");
    let said = format!("{:#}", crate::config::check(&home).err()?);
    said.contains("unknown").then_some(said)
}

#[test]
fn every_setting_in_the_docs_tables_is_one_airlock_up_reads() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("a doc");
        for (number, section, key) in table_keys(&text) {
            checked += 1;
            if let Some(said) = unknown_setting(&section, &key) {
                wrong.push(format!("{}:{number}: [{section}] {key}: {said}", file.display()));
            }
        }
    }
    assert!(
        checked >= 60,
        "only {checked} settings found in tables: is the table reader broken?"
    );
    assert!(
        wrong.is_empty(),
        "{} settings in the docs are not read:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The defaults of the sections whose config serializes whole, as TOML.
fn defaults(section: &str) -> Option<toml::Value> {
    match section {
        "executor" => toml::Value::try_from(airlock_executor::SandboxConfig::default()).ok(),
        "auditor" => toml::Value::try_from(airlock_auditor::Config::default()).ok(),
        _ => None,
    }
}

/// Whether a documented default (`documented`, a TOML literal) says the same as `actual`:
/// durations compare as durations (`"60s"` is `"1m"`).
fn same_default(documented: &toml::Value, actual: &toml::Value) -> bool {
    if let (Some(a), Some(b)) = (documented.as_str(), actual.as_str())
        && let (Ok(a), Ok(b)) = (humantime::parse_duration(a), humantime::parse_duration(b))
    {
        return a == b;
    }
    documented == actual
}

/// Every default in a docs table that is one TOML literal in backticks (`` `"60s"` ``, `` `4` ``,
/// `` `true` ``), for a single setting of a section whose defaults are known, is the default the
/// code has. Defaults said in words ("one per core") are left to the reader.
#[test]
fn documented_defaults_are_the_codes_defaults() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("a doc");
        let lines: Vec<&str> = text.lines().collect();
        for (number, section, key) in table_keys(&text) {
            let Some(defaults) = defaults(&section) else { continue };
            let cells: Vec<&str> = lines[number - 1].split('|').map(str::trim).collect();
            // `| key | default | meaning |`: one key in the first cell, one literal in the second.
            let (Some(first), Some(default)) = (cells.get(1), cells.get(2)) else {
                continue;
            };
            if backticked(first).len() != 1 {
                continue;
            }
            let Some(literal) = default.strip_prefix('`').and_then(|d| d.strip_suffix('`')) else {
                continue;
            };
            // A placeholder (`"home-<random>"`: what `airlock init` writes) is not a literal.
            if literal.contains('<') {
                continue;
            }
            let Ok(documented) = toml::from_str::<toml::Table>(&format!("v = {literal}")) else {
                continue;
            };
            let mut actual = Some(&defaults);
            for part in key.split('.') {
                actual = actual.and_then(|v| v.get(part));
            }
            let Some(actual) = actual else { continue };
            checked += 1;
            if !same_default(&documented["v"], actual) {
                wrong.push(format!(
                    "{}:{number}: [{section}] {key}: the docs say {literal}, the code {actual}",
                    file.display()
                ));
            }
        }
    }
    eprintln!("{checked} documented defaults checked");
    assert!(checked >= 10, "only {checked} defaults checked: is the reader broken?");
    assert!(
        wrong.is_empty(),
        "{} documented defaults are wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn the_checks_catch_a_drift() {
    use clap::Parser as _;
    let renamed = invocations("airlock run --no-such-flag x.py");
    assert!(crate::Cli::try_parse_from(&renamed[0]).is_err());
    assert!(unknown_in("[auditor]\nbatch_intervall = \"1s\"\n").is_some());
    assert!(unknown_in("[auditor]\ncommit_linger = \"1s\"\n").is_none());
    assert!(unknown_setting("executor", "pool.min_idel").is_some());
    assert!(unknown_setting("executor", "pool.min_idle").is_none());
    let table = "## `[executor]`: x\n\n| key | default |\n|---|---|\n| `pool.max_age`, `instance` | 1 |\n";
    let keys: Vec<String> = table_keys(table).into_iter().map(|(_, _, k)| k).collect();
    assert_eq!(keys, ["pool.max_age", "instance"]);
    assert_eq!(
        invocations("export X=1 && target/release/airlock status --wait 5 > /dev/null &"),
        vec![vec!["airlock".to_owned(), "status".into(), "--wait".into(), "5".into()]]
    );
}
