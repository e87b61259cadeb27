//! `airlock init`: create a stack's home (keys, NATS credentials, configuration) and say what
//! was made and what to run next. Running it again keeps everything and says so.

use crate::cluster::{self, InitArgs};
use crate::home::Home;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(home: &Home, args: &InitArgs) -> anyhow::Result<ExitCode> {
    if args.cluster {
        // It says what it wrote itself: certificates and node configurations.
        return cluster::init(home, args);
    }
    let before = files_under(home.root());
    let exit = cluster::init(home, args)?;
    let made: Vec<PathBuf> = files_under(home.root()).difference(&before).cloned().collect();
    print!("{}", report(home.root(), &made));
    Ok(exit)
}

/// Every file under `root`, a few levels deep (a fresh home's keys, credentials and configs;
/// a running stack's data directories are not looked into).
fn files_under(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut BTreeSet<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && depth > 0 => walk(&path, depth - 1, out),
                Ok(kind) if kind.is_file() => {
                    out.insert(path);
                }
                _ => {}
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, 2, &mut out);
    out
}

/// What `init` says: the home, each kind of file it made, and the next command.
fn report(root: &Path, made: &[PathBuf]) -> String {
    let relative = |p: &PathBuf| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let group =
        |filter: &dyn Fn(&str) -> bool| -> Vec<String> { made.iter().map(relative).filter(|p| filter(p)).collect() };
    let mut out = format!("airlock home: {}\n", root.display());
    if made.is_empty() {
        out.push_str("  everything was already there; nothing was changed\n");
    }
    let kinds: [(&str, Vec<String>); 3] = [
        (
            "the configuration (every section, defaults commented)",
            group(&|p| p == "airlock.toml"),
        ),
        (
            "signing keys (gate, auditor, approver, bridge; the .pub files are their verifier keys)",
            group(&|p| p.starts_with("keys/")),
        ),
        (
            "NATS credentials, one nkey seed per user",
            group(&|p| p.starts_with("creds/")),
        ),
    ];
    let mut listed = 0;
    for (what, files) in &kinds {
        if !files.is_empty() {
            listed += files.len();
            out.push_str(&format!("  made {what}:\n    {}\n", files.join(" ")));
        }
    }
    if listed < made.len() {
        out.push_str(&format!("  and {} other files\n", made.len() - listed));
    }
    out.push_str("next: airlock up    (starts NATS, the services and the sandbox image; then `airlock run FILE`)\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_what_was_made_and_the_next_command() {
        let root = Path::new("/h");
        let made = [
            "/h/airlock.toml",
            "/h/keys/gate.key",
            "/h/keys/gate.pub",
            "/h/creds/mai.nk",
        ]
        .map(PathBuf::from);
        let text = report(root, &made);
        assert!(text.contains("airlock home: /h"), "{text}");
        assert!(text.contains("the configuration"), "{text}");
        assert!(text.contains("keys/gate.key keys/gate.pub"), "{text}");
        assert!(text.contains("creds/mai.nk"), "{text}");
        assert!(text.contains("next: airlock up"), "{text}");
        let again = report(root, &[]);
        assert!(again.contains("nothing was changed"), "{again}");
    }
}
