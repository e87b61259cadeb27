//! The crates depend on each other only as `docs/architecture.md` draws it: read from every
//! workspace member's `Cargo.toml`, checked against the table below, which is the document's.

use airlock_tests::repo_root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each crate and the Airlock crates it may depend on (normal dependencies; dev-dependencies are
/// for tests and free). `None`: anything (the CLI and the cross-service tests).
const ALLOWED: &[(&str, Option<&[&str]>)] = &[
    ("airlock-protocol", Some(&[])),
    ("airlock-telemetry", Some(&["airlock-protocol"])),
    ("airlock-bash-parser", Some(&[])),
    ("airlock-observe", Some(&[])),
    ("airlock-auditlog", Some(&["airlock-protocol"])),
    ("airlock-bus", Some(&["airlock-protocol", "airlock-telemetry"])),
    ("airlock-egress", Some(&["airlock-protocol"])),
    ("airlock-approvals", Some(&["airlock-protocol"])),
    (
        "airlock-assessor",
        Some(&[
            "airlock-protocol",
            "airlock-bash-parser",
            "airlock-bus",
            "airlock-telemetry",
        ]),
    ),
    (
        "airlock-assessor-quality",
        Some(&["airlock-assessor", "airlock-bash-parser", "airlock-protocol"]),
    ),
    (
        "airlock-override-gate",
        Some(&[
            "airlock-protocol",
            "airlock-approvals",
            "airlock-bus",
            "airlock-telemetry",
        ]),
    ),
    (
        "airlock-executor",
        // The assessor's engine rates the wheels the executor resolves (packages.rs).
        Some(&[
            "airlock-protocol",
            "airlock-bus",
            "airlock-telemetry",
            "airlock-egress",
            "airlock-assessor",
            // The kernel's record of each run (observation.rs).
            "airlock-observe",
        ]),
    ),
    (
        "airlock-auditor",
        Some(&[
            "airlock-protocol",
            "airlock-auditlog",
            "airlock-bus",
            "airlock-telemetry",
        ]),
    ),
    (
        "airlock-chat-bridge",
        Some(&[
            "airlock-protocol",
            "airlock-approvals",
            "airlock-bus",
            "airlock-telemetry",
        ]),
    ),
    (
        "airlock-client",
        Some(&["airlock-protocol", "airlock-bus", "airlock-auditlog"]),
    ),
    ("airlock-cli", None),
    ("airlock-tests", None),
];

/// A member's package name and its Airlock dependencies (the `[dependencies]` table only).
fn read_member(manifest: &Path) -> (String, BTreeSet<String>) {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let value: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let name = value["package"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{} names no package", manifest.display()))
        .to_owned();
    let deps = value
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|table| {
            table
                .keys()
                .filter(|k| k.starts_with("airlock-") || k.starts_with("airlock_"))
                .map(|k| k.replace('_', "-"))
                .collect()
        })
        .unwrap_or_default();
    (name, deps)
}

#[test]
fn crates_depend_on_each_other_only_as_the_architecture_says() {
    let root = repo_root();
    let workspace: toml::Table = toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml"))
        .expect("workspace manifest");
    let members: Vec<String> = workspace["workspace"]["members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|m| m.as_str().map(str::to_owned))
        .collect();
    let allowed: BTreeMap<&str, Option<&[&str]>> = ALLOWED.iter().copied().collect();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for member in &members {
        let (name, deps) = read_member(&root.join(member).join("Cargo.toml"));
        seen.insert(name.clone());
        match allowed.get(name.as_str()) {
            None => problems.push(format!(
                "{name} ({member}) is not in docs/architecture.md's table (and ALLOWED here)"
            )),
            Some(None) => {}
            Some(Some(may)) => {
                for dep in deps.iter().filter(|d| !may.contains(&d.as_str())) {
                    problems.push(format!(
                        "{name} depends on {dep}, which docs/architecture.md does not allow"
                    ));
                }
            }
        }
    }
    for (name, _) in ALLOWED {
        if !seen.contains(*name) {
            problems.push(format!("{name} is in the table but not a workspace member"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The document and this table are the same table.
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    for (name, _) in ALLOWED {
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/architecture.md does not describe {name}"
        );
    }
}
