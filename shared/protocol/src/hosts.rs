//! Host allow-lists for read-only internet: `[executor.egress] read_only_hosts`, the narrower
//! lists `[gate.policy.read_only]` gives an origin, and the list a grant names. One home for
//! what an entry matches, used by the gate (which narrows), the executor (which checks a grant
//! against its own list) and the egress proxy (which enforces it).

/// The hosts a read-only run may fetch from when the operator names none
/// (`[executor.egress] read_only_hosts`): the package index and the Python documentation. One
/// home for the egress proxy's default and the gate's display of it.
pub const DEFAULT_READ_ONLY_HOSTS: [&str; 3] = ["pypi.org", "files.pythonhosted.org", "docs.python.org"];

/// An entry as compared: trimmed, without a trailing dot, lower case.
fn normal(entry: &str) -> String {
    entry.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Whether `host` (lower case, no port) is on `allowed`: an exact name, or a subdomain of a
/// `*.name` entry (the name itself needs its own entry).
pub fn host_allowed(allowed: &[String], host: &str) -> bool {
    allowed.iter().any(|entry| {
        let entry = normal(entry);
        match entry.strip_prefix("*.") {
            Some(parent) => {
                !parent.is_empty()
                    && host
                        .strip_suffix(parent)
                        .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            }
            None => entry == host,
        }
    })
}

/// Whether every host `entry` matches is also matched by `allowed`: a name that `allowed`
/// allows, or `*.name` under a wildcard of `allowed` that covers `name`'s subdomains
/// (`*.docs.example.org` under `*.example.org` or `*.docs.example.org`). What a narrower list
/// must satisfy entry by entry, so that narrowing never widens.
pub fn entry_covered(allowed: &[String], entry: &str) -> bool {
    let entry = normal(entry);
    match entry.strip_prefix("*.") {
        Some("") => false,
        Some(parent) => allowed.iter().any(|a| {
            normal(a)
                .strip_prefix("*.")
                .is_some_and(|p| !p.is_empty() && (parent == p || parent.ends_with(&format!(".{p}"))))
        }),
        None => !entry.is_empty() && host_allowed(allowed, &entry),
    }
}

/// The entries of `narrower` that `allowed` does not cover (none: `narrower` narrows it).
pub fn uncovered<'a>(allowed: &[String], narrower: &'a [String]) -> Vec<&'a str> {
    narrower
        .iter()
        .filter(|entry| !entry_covered(allowed, entry))
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Vec<String> {
        entries.iter().map(|e| (*e).to_owned()).collect()
    }

    #[test]
    fn hosts_match_exact_names_and_strict_subdomains_of_wildcards() {
        let allowed = list(&["docs.python.org", "*.example.org"]);
        assert!(host_allowed(&allowed, "docs.python.org"));
        assert!(host_allowed(&allowed, "a.example.org"));
        assert!(host_allowed(&allowed, "a.b.example.org"));
        assert!(!host_allowed(&allowed, "example.org"), "the apex needs its own entry");
        assert!(!host_allowed(&allowed, "badexample.org"));
        assert!(!host_allowed(&allowed, "example.org.evil.test"));
        assert!(!host_allowed(&allowed, "python.org"));
        assert!(!host_allowed(&allowed, "xdocs.python.org"));
    }

    #[test]
    fn a_narrower_list_is_covered_entry_by_entry() {
        let allowed = list(&["pypi.org", "Docs.Python.org.", "*.example.org", "a.test"]);
        for inside in [
            "pypi.org",
            "docs.python.org",
            "x.example.org",
            "*.example.org",
            "*.docs.example.org",
        ] {
            assert!(entry_covered(&allowed, inside), "{inside} is inside");
        }
        for outside in [
            "python.org",
            "example.org",
            "*.python.org",
            "*.org",
            "*.",
            "*.test",
            "b.test",
            "",
            "*.a.test",
        ] {
            assert!(!entry_covered(&allowed, outside), "{outside} is outside");
        }
        assert_eq!(uncovered(&allowed, &list(&["pypi.org", "evil.test"])), ["evil.test"]);
        assert!(uncovered(&allowed, &list(&[])).is_empty());
    }
}
