//! What the proxy allows. Every field has a default: PyPI and the Python documentation, over
//! HTTPS, with byte caps. Two allow-lists: `allow_hosts` for package installs, `read_only_hosts`
//! for programs run with `network = "read-only"` (the forward proxy, [`crate::forward`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

const MIB: u64 = 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EgressConfig {
    /// Hosts the proxy fetches from (exact names; IP literals are refused).
    pub allow_hosts: Vec<String>,
    /// Hosts a program run with `network = "read-only"` may fetch from through the forward
    /// proxy: exact names, or `*.example.org` for every subdomain of example.org (not the name
    /// itself). Separate from `allow_hosts`: installs and programs are allowed different things.
    pub read_only_hosts: Vec<String>,
    /// PEM files of extra certificate authorities trusted for upstream TLS (a local mirror's
    /// own CA), on top of the system's roots.
    pub upstream_roots: Vec<std::path::PathBuf>,
    /// Longest request target (path and query, or the absolute URL) the forward proxy passes
    /// on: a GET carries data out in its URL, so this bounds how much.
    pub max_url_bytes: usize,
    /// Most bytes of a forwarded request's headers (names and values, all together).
    pub max_header_bytes: usize,
    /// The package index: pip is pointed at `http://PROXY/{index_host}{index_path}`.
    pub index_host: String,
    pub index_path: String,
    /// Operator-pinned upstream origins (`host` → `http://127.0.0.1:8080`), for a local mirror;
    /// they skip DNS and the private-address check. Everything else goes over HTTPS to a
    /// public address.
    pub pinned: BTreeMap<String, String>,
    /// Most bytes one install, or one read-only run, may download, all responses together.
    pub max_total_bytes: u64,
    /// Most bytes of one index page (index pages are rewritten in memory).
    pub max_page_bytes: u64,
    /// For an executor: the control address of an already-running `airlock-egress`
    /// (`http://127.0.0.1:3129`); each install opens a session there, and that proxy's own
    /// configuration applies. Unset: the executor runs a proxy of its own for each install,
    /// with these rules. A standalone `airlock-egress` ignores it.
    pub proxy: Option<String>,
    /// Longest wait for one upstream request.
    #[serde(with = "humantime_serde")]
    pub upstream_timeout: Duration,
    /// The key of the previous release (seconds), read with a warning by `read_legacy_keys`;
    /// public only so that struct-update syntax works outside the crate.
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub upstream_timeout_secs: Option<u64>,
}

impl Default for EgressConfig {
    fn default() -> Self {
        Self {
            allow_hosts: vec![
                "pypi.org".to_owned(),
                "files.pythonhosted.org".to_owned(),
                "docs.python.org".to_owned(),
            ],
            read_only_hosts: airlock_protocol::DEFAULT_READ_ONLY_HOSTS.map(str::to_owned).to_vec(),
            upstream_roots: Vec::new(),
            max_url_bytes: 4096,
            max_header_bytes: 8192,
            index_host: "pypi.org".to_owned(),
            index_path: "/simple/".to_owned(),
            pinned: BTreeMap::new(),
            max_total_bytes: 256 * MIB,
            max_page_bytes: 16 * MIB,
            proxy: None,
            upstream_timeout: Duration::from_secs(60),
            upstream_timeout_secs: None,
        }
    }
}

impl EgressConfig {
    /// Reads `upstream_timeout_secs` (the previous release's key) with a warning.
    pub fn read_legacy_keys(&mut self) {
        if let Some(secs) = self.upstream_timeout_secs.take() {
            tracing::warn!(
                "deprecated setting: write upstream_timeout = \"{secs}s\" instead of upstream_timeout_secs (read for one more release)"
            );
            self.upstream_timeout = Duration::from_secs(secs);
        }
    }

    /// The index's path through the proxy: `/{index_host}{index_path}`.
    pub fn index_route(&self) -> String {
        format!("/{}{}", self.index_host, self.index_path)
    }
}
