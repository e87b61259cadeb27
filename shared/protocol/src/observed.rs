//! The `observed` event: what a run did as the host's kernel saw it, recorded by the executor
//! from outside the sandbox (eBPF tracepoints filtered by the container's pid namespace), not
//! reported by the program. Every list is bounded; what was cut is counted, and so are the
//! events the kernel could not deliver (`events_lost`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Entries kept per list; the rest are counted in its `*_omitted`.
pub const MAX_PROCESSES: usize = 64;
pub const MAX_FILES: usize = 128;
pub const MAX_NETWORK: usize = 64;
pub const MAX_PRIVILEGED: usize = 64;
pub const MAX_FINDINGS: usize = 32;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Observed {
    /// Who observed: `host kernel (eBPF)`. Empty when unavailable.
    #[serde(default)]
    pub source: String,
    /// Why nothing was observed (no BTF or privilege, a runtime whose syscalls the host does not
    /// see, ...). When set, every list is empty and says nothing about the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// Programs executed, in order (the pid tree through `pid`/`ppid`).
    #[serde(default)]
    pub processes: Vec<ObservedProcess>,
    #[serde(default)]
    pub processes_omitted: u64,
    /// Files touched, one entry per path and kind of access.
    #[serde(default)]
    pub files: Vec<ObservedFile>,
    #[serde(default)]
    pub files_omitted: u64,
    /// Socket creation, connect, bind and sends, one entry per call, family and address.
    #[serde(default)]
    pub network: Vec<ObservedNetwork>,
    #[serde(default)]
    pub network_omitted: u64,
    /// Privileged or dangerous attempts (ptrace, set*id, capset, mount, module or BPF loading,
    /// io_uring, unshare/setns), allowed or not.
    #[serde(default)]
    pub privileged: Vec<ObservedAttempt>,
    #[serde(default)]
    pub privileged_omitted: u64,
    /// Disagreements with the program's own account: a network attempt the kernel saw that the
    /// program's report (its Python audit hook) did not mention.
    #[serde(default)]
    pub findings: Vec<String>,
    /// Events received from the kernel for this run.
    #[serde(default)]
    pub events: u64,
    /// Events the kernel dropped (ring buffer full): the record is incomplete when not zero.
    #[serde(default)]
    pub events_lost: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObservedProcess {
    /// Host pid of the process and of its parent.
    pub pid: u32,
    pub ppid: u32,
    pub path: String,
    /// The head of argv (at most 8 arguments, each cut at 127 bytes).
    pub argv: Vec<String>,
    #[serde(default)]
    pub argv_cut: bool,
    /// Milliseconds since the observation began.
    pub at_ms: u64,
    /// `ok` or the error (`ENOENT`, ...): a failed exec is listed too.
    pub result: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObservedFile {
    /// As the program named it (relative paths are relative to its working directory).
    pub path: String,
    /// read, write, create, delete, rename, mkdir, chmod, chown.
    pub access: String,
    pub count: u64,
    /// Of those, how many failed.
    #[serde(default)]
    pub failed: u64,
    pub first_ms: u64,
    /// The first attempt's result: `ok` or the error.
    pub result: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObservedNetwork {
    /// socket, connect, bind, send.
    pub call: String,
    /// inet, inet6, unix, other (`socket`: the family asked for).
    pub family: String,
    /// `address:port`, a unix path, or empty (a send on a connected socket, a socket call).
    #[serde(default)]
    pub address: String,
    pub count: u64,
    #[serde(default)]
    pub failed: u64,
    pub first_ms: u64,
    pub result: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObservedAttempt {
    pub call: String,
    pub detail: String,
    pub count: u64,
    pub first_ms: u64,
    pub result: String,
}

impl Observed {
    /// A record that says observation was not possible, and why.
    pub fn unavailable(reason: impl Into<String>) -> Observed {
        Observed {
            unavailable: Some(reason.into()),
            ..Observed::default()
        }
    }

    /// One line: "read 3 files, wrote out/chart.png, no network attempts, 0 events lost".
    pub fn summary(&self) -> String {
        if let Some(reason) = &self.unavailable {
            return format!("not observed: {reason}");
        }
        let count = |access: &str| self.files.iter().filter(|f| f.access == access).count();
        let mut parts = vec![format!(
            "{} program{} run",
            self.processes.len() as u64 + self.processes_omitted,
            if self.processes.len() as u64 + self.processes_omitted == 1 {
                ""
            } else {
                "s"
            }
        )];
        let reads = count("read");
        parts.push(format!("read {reads} file{}", if reads == 1 { "" } else { "s" }));
        let written: Vec<&str> = self
            .files
            .iter()
            .filter(|f| matches!(f.access.as_str(), "write" | "create") && f.failed < f.count)
            .map(|f| f.path.as_str())
            .collect();
        match written.as_slice() {
            [] => parts.push("wrote nothing".into()),
            [one] => parts.push(format!("wrote {one}")),
            many => parts.push(format!("wrote {} files", many.len())),
        }
        let deleted = count("delete");
        if deleted > 0 {
            parts.push(format!("deleted {deleted}"));
        }
        let attempts: u64 = self
            .network
            .iter()
            .filter(|n| n.call != "socket")
            .map(|n| n.count)
            .sum();
        parts.push(match attempts {
            0 => "no network attempts".into(),
            1 => "1 network attempt".into(),
            n => format!("{n} network attempts"),
        });
        if !self.privileged.is_empty() {
            parts.push(format!("{} privileged attempts", self.privileged.len()));
        }
        parts.push(format!("{} events lost", self.events_lost));
        parts.join(", ")
    }
}

impl Observed {
    /// The whole record, one line per entry (for `airlock replay`), text from the program made
    /// visible (no control characters).
    pub fn lines(&self) -> Vec<String> {
        use crate::text::visible_line;
        let mut lines = vec![match &self.unavailable {
            Some(_) => self.summary(),
            None => format!("{} ({} events, by the {})", self.summary(), self.events, self.source),
        }];
        for p in &self.processes {
            lines.push(format!(
                "exec {} [{}{}] pid {} parent {} at {} ms: {}",
                visible_line(&p.path),
                visible_line(&p.argv.join(" ")),
                if p.argv_cut { " ..." } else { "" },
                p.pid,
                p.ppid,
                p.at_ms,
                p.result
            ));
        }
        for f in &self.files {
            lines.push(format!(
                "{} {} x{} ({} failed) first at {} ms: {}",
                f.access,
                visible_line(&f.path),
                f.count,
                f.failed,
                f.first_ms,
                f.result
            ));
        }
        for n in &self.network {
            lines.push(format!(
                "{} {} {} x{} ({} failed) first at {} ms: {}",
                n.call,
                n.family,
                visible_line(&n.address),
                n.count,
                n.failed,
                n.first_ms,
                n.result
            ));
        }
        for a in &self.privileged {
            lines.push(format!(
                "{} {} x{} first at {} ms: {}",
                a.call,
                visible_line(&a.detail),
                a.count,
                a.first_ms,
                a.result
            ));
        }
        for (what, n) in [
            ("processes", self.processes_omitted),
            ("file accesses", self.files_omitted),
            ("network calls", self.network_omitted),
            ("privileged attempts", self.privileged_omitted),
        ] {
            if n > 0 {
                lines.push(format!("{n} more {what} not listed"));
            }
        }
        lines.extend(self.findings.iter().map(|f| format!("finding: {}", visible_line(f))));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_reads_as_a_sentence() {
        let mut observed = Observed {
            source: "host kernel (eBPF)".into(),
            ..Observed::default()
        };
        observed.files.push(ObservedFile {
            path: "out/chart.png".into(),
            access: "create".into(),
            count: 1,
            failed: 0,
            first_ms: 3,
            result: "ok".into(),
        });
        assert_eq!(
            observed.summary(),
            "0 programs run, read 0 files, wrote out/chart.png, no network attempts, 0 events lost"
        );
        assert_eq!(Observed::unavailable("no BTF").summary(), "not observed: no BTF");
    }
}
