//! The kernel's account of each run (`airlock-observe`): the executor watches a run's container
//! by its pid namespace from before the job is handed to it until the container has stopped,
//! and turns the events into a bounded [`Observed`] record, published as the run's `observed`
//! event before its terminal one.
//!
//! When the container starts: both a cold and a warm container run `bootstrap.py` as PID 1,
//! which waits for its job frame on stdin; the watch is added before the frame is written, so
//! every syscall of the program's code is inside it. What the bootstrap did before (its own
//! start) is not recorded.

use crate::gvisor_trace::Trace;
use crate::launch::Launched;
use airlock_observe::{Action, Event, EventSink, Finished, Observer, PidNamespace, PrivilegedCall, Watch};
use airlock_protocol::observed::{MAX_FILES, MAX_FINDINGS, MAX_NETWORK, MAX_PRIVILEGED, MAX_PROCESSES};
use airlock_protocol::{Observed, ObservedAttempt, ObservedFile, ObservedNetwork, ObservedProcess, Runtime};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// `[executor.observe]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObserveConfig {
    /// Observe runs with eBPF when the kernel allows it.
    pub enabled: bool,
    /// Refuse to start (and so to run anything) without kernel observation.
    pub required: bool,
}

impl Default for ObserveConfig {
    fn default() -> Self {
        ObserveConfig {
            enabled: true,
            required: false,
        }
    }
}

pub const SOURCE: &str = "host kernel (eBPF)";
/// How a record turned off by configuration begins.
const TURNED_OFF: &str = "turned off";

/// The executor's observer, or why there is none.
#[derive(Clone)]
pub enum Observation {
    On(Observer),
    Off(String),
}

impl Observation {
    /// Loads the BPF programs. `Err(reason)` only when observation is required and unavailable.
    pub fn start(config: &ObserveConfig) -> Result<Observation, String> {
        let observation = if !config.enabled {
            Observation::Off(format!("{TURNED_OFF} ([executor.observe] enabled = false)"))
        } else {
            // One set of programs per process, shared by every sandbox in it (tests and the
            // benchmark start several): each set loaded would run on every syscall of the host.
            static SHARED: std::sync::OnceLock<Result<Observer, String>> = std::sync::OnceLock::new();
            match SHARED.get_or_init(|| Observer::start().map_err(|error| error.to_string())) {
                Ok(observer) => Observation::On(observer.clone()),
                Err(reason) => Observation::Off(reason.clone()),
            }
        };
        match &observation {
            Observation::Off(reason) if config.required => Err(format!(
                "[executor.observe] required = true, and kernel observation is unavailable: {reason}"
            )),
            Observation::Off(reason) => {
                tracing::warn!(%reason, "runs are not observed by the kernel");
                Ok(observation)
            }
            Observation::On(_) => Ok(observation),
        }
    }

    /// Why runs are not observed, if they are not.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Observation::On(_) => None,
            Observation::Off(reason) => Some(reason),
        }
    }

    /// Starts watching a launched container (before its job frame is written). Under runsc the
    /// record is gVisor's trace session's, set up when the container started (`trace`).
    pub fn begin(
        &self,
        launched: &Launched,
        runtime: Runtime,
        proc_root: &Path,
        trace: Option<Result<Trace, String>>,
    ) -> RunObservation {
        if runtime == Runtime::Runsc {
            return match (self, trace) {
                (Observation::Off(reason), None) if reason.starts_with(TURNED_OFF) => {
                    RunObservation::Unavailable(reason.clone())
                }
                (_, Some(Ok(trace))) => {
                    trace.start_clock();
                    RunObservation::Gvisor(trace)
                }
                (_, Some(Err(reason))) => RunObservation::Unavailable(format!(
                    "runtime runsc: the program's syscalls are served by gVisor's kernel, which the host's tracepoints do \
                     not see, and gVisor's own trace session could not be set up ({reason}); what was observed is the \
                     engine's view (usage samples, the exit) and gVisor's own kernel's answers every 3 s (the fill of \
                     /tmp, the number of processes), in the run's usage and limits"
                )),
                (_, None) => RunObservation::Unavailable(
                    "runtime runsc: the sandbox was started without gVisor's trace session".into(),
                ),
            };
        }
        let observer = match self {
            Observation::Off(reason) => return RunObservation::Unavailable(reason.clone()),
            Observation::On(observer) => observer,
        };
        let Some(pid) = launched.host_pid else {
            return RunObservation::Unavailable("the engine did not report the container's process".into());
        };
        let watch = PidNamespace::of_process_in(proc_root, pid)
            .and_then(|namespace| observer.watch(namespace, Recorder::new()));
        match watch {
            Ok(watch) => RunObservation::Watching(watch),
            Err(error) => RunObservation::Unavailable(error.to_string()),
        }
    }
}

pub enum RunObservation {
    Watching(Watch<Recorder>),
    /// Under runsc: gVisor's own trace points.
    Gvisor(Trace),
    Unavailable(String),
}

impl RunObservation {
    /// Stops watching (the container has stopped) and returns the record.
    pub fn finish(self) -> Observed {
        match self {
            RunObservation::Unavailable(reason) => Observed::unavailable(reason),
            RunObservation::Gvisor(trace) => trace.finish(),
            RunObservation::Watching(watch) => {
                let Finished { sink, lost } = watch.finish();
                sink.into_record(lost)
            }
        }
    }
}

pub(crate) fn monotonic_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to write into; CLOCK_MONOTONIC is the clock of bpf_ktime_get_ns.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Reads of the system's libraries and interpreter modules: one summary entry, not one each
/// (a Python program reads hundreds), so that the list keeps what the program itself touched.
const LIBRARY_PREFIXES: &[&str] = &[
    "/usr/lib/",
    "/lib/",
    "/usr/lib64/",
    "/usr/local/lib/",
    "/etc/ld.so.cache",
];
const LIBRARY_READS: &str = "(system libraries: /usr/lib, /lib, /usr/local/lib)";

/// Builds the record as events arrive: bounded lists, counted overflow.
pub struct Recorder {
    started_ns: u64,
    events: u64,
    processes: Vec<ObservedProcess>,
    processes_omitted: u64,
    files: Keyed<ObservedFile>,
    network: Keyed<ObservedNetwork>,
    privileged: Keyed<ObservedAttempt>,
}

/// A bounded list with one entry per key; accesses to keys beyond the bound are counted.
struct Keyed<T> {
    index: HashMap<(String, String), usize>,
    entries: Vec<T>,
    max: usize,
    omitted: u64,
}

impl<T> Keyed<T> {
    fn new(max: usize) -> Self {
        Keyed {
            index: HashMap::new(),
            entries: Vec::new(),
            max,
            omitted: 0,
        }
    }

    /// The entry for `key`, made by `new` when there is room; `None` (counted) when full.
    fn entry(&mut self, key: (String, String), new: impl FnOnce() -> T) -> Option<(&mut T, bool)> {
        if let Some(&i) = self.index.get(&key) {
            return Some((&mut self.entries[i], false));
        }
        if self.entries.len() >= self.max {
            self.omitted += 1;
            return None;
        }
        self.index.insert(key, self.entries.len());
        self.entries.push(new());
        let last = self.entries.len() - 1;
        Some((&mut self.entries[last], true))
    }
}

fn result_text(event: &Event) -> String {
    match event.errno() {
        None => "ok".into(),
        Some(errno) => errno_name(errno),
    }
}

fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EEXIST => "EEXIST",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EROFS => "EROFS",
        libc::EBADF => "EBADF",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EINPROGRESS => "EINPROGRESS",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ENOSPC => "ENOSPC",
        libc::EAGAIN => "EAGAIN",
        _ => return format!("errno {errno}"),
    };
    name.into()
}

fn family_name(family: u16) -> &'static str {
    match family as i32 {
        libc::AF_INET => "inet",
        libc::AF_INET6 => "inet6",
        libc::AF_UNIX => "unix",
        libc::AF_NETLINK => "netlink",
        libc::AF_PACKET => "packet",
        _ => "other",
    }
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        Recorder {
            started_ns: monotonic_ns(),
            events: 0,
            processes: Vec::new(),
            processes_omitted: 0,
            files: Keyed::new(MAX_FILES),
            network: Keyed::new(MAX_NETWORK),
            privileged: Keyed::new(MAX_PRIVILEGED),
        }
    }

    fn file(&mut self, event: &Event, at_ms: u64, path: &str, access: &str) {
        let path = if access == "read" && LIBRARY_PREFIXES.iter().any(|p| path.starts_with(p)) {
            LIBRARY_READS
        } else {
            path
        };
        let result = result_text(event);
        let failed = u64::from(event.errno().is_some());
        let new = || ObservedFile {
            path: path.to_owned(),
            access: access.to_owned(),
            count: 0,
            failed: 0,
            first_ms: at_ms,
            result: result.clone(),
        };
        if let Some((entry, _)) = self.files.entry((path.to_owned(), access.to_owned()), new) {
            entry.count += 1;
            entry.failed += failed;
        }
    }

    fn network(&mut self, event: &Event, at_ms: u64, call: &str, family: &str, address: String) {
        let result = result_text(event);
        let failed = u64::from(event.errno().is_some());
        let key = (format!("{call} {family}"), address.clone());
        let new = || ObservedNetwork {
            call: call.to_owned(),
            family: family.to_owned(),
            address,
            count: 0,
            failed: 0,
            first_ms: at_ms,
            result: result.clone(),
        };
        if let Some((entry, _)) = self.network.entry(key, new) {
            entry.count += 1;
            entry.failed += failed;
        }
    }

    fn privileged(&mut self, event: &Event, at_ms: u64, call: &str, detail: String) {
        let result = result_text(event);
        let new = || ObservedAttempt {
            call: call.to_owned(),
            detail: detail.clone(),
            count: 0,
            first_ms: at_ms,
            result,
        };
        if let Some((entry, _)) = self.privileged.entry((call.to_owned(), detail.clone()), new) {
            entry.count += 1;
        }
    }

    /// Times from now on are counted from `now_ns` (CLOCK_MONOTONIC): the job's start, for a
    /// recorder made with its container.
    pub(crate) fn start_clock_at(&mut self, now_ns: u64) {
        self.started_ns = now_ns;
    }

    pub(crate) fn into_record(self, lost: u64) -> Observed {
        Observed {
            source: SOURCE.into(),
            unavailable: None,
            processes: self.processes,
            processes_omitted: self.processes_omitted,
            files: self.files.entries,
            files_omitted: self.files.omitted,
            network: self.network.entries,
            network_omitted: self.network.omitted,
            privileged: self.privileged.entries,
            privileged_omitted: self.privileged.omitted,
            findings: Vec::new(),
            events: self.events,
            events_lost: lost,
        }
    }
}

/// How an open's flags read: created (O_CREAT), written, or read.
fn open_access(flags: u64) -> &'static str {
    let flags = flags as i32;
    if flags & libc::O_CREAT != 0 {
        "create"
    } else if flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0 {
        "write"
    } else {
        "read"
    }
}

impl EventSink for Recorder {
    fn event(&mut self, event: Event) {
        self.events += 1;
        let at_ms = event.monotonic_ns.saturating_sub(self.started_ns) / 1_000_000;
        match &event.action {
            Action::Exec { path, argv, argv_cut } => {
                if self.processes.len() >= MAX_PROCESSES {
                    self.processes_omitted += 1;
                    return;
                }
                self.processes.push(ObservedProcess {
                    pid: event.pid,
                    ppid: event.ppid,
                    path: path.clone(),
                    argv: argv.clone(),
                    argv_cut: *argv_cut,
                    at_ms,
                    result: result_text(&event),
                });
            }
            Action::Exit => {}
            Action::Open { path, flags, .. } => self.file(&event, at_ms, path, open_access(*flags)),
            Action::Unlink { path, .. } => self.file(&event, at_ms, path, "delete"),
            Action::Rename { from, to, .. } => {
                let both = format!("{from} -> {to}");
                self.file(&event, at_ms, &both, "rename");
            }
            Action::Mkdir { path, .. } => self.file(&event, at_ms, path, "mkdir"),
            Action::Chmod { path, mode, .. } => {
                let path = if path.is_empty() { "(by descriptor)" } else { path };
                self.file(&event, at_ms, &format!("{path} mode {mode:o}"), "chmod");
            }
            Action::Chown { path, uid, gid, .. } => {
                let path = if path.is_empty() { "(by descriptor)" } else { path };
                self.file(&event, at_ms, &format!("{path} to {uid}:{gid}"), "chown");
            }
            Action::Socket { family, .. } => self.network(&event, at_ms, "socket", family_name(*family), String::new()),
            Action::Connect { address, .. } | Action::Bind { address, .. } | Action::Send { address, .. } => {
                let call = match event.action {
                    Action::Connect { .. } => "connect",
                    Action::Bind { .. } => "bind",
                    _ => "send",
                };
                let (family, text) = match address {
                    Some(address) => (address.family(), address.to_string()),
                    None => ("", String::new()),
                };
                self.network(&event, at_ms, call, family, text);
            }
            Action::Mount { source, target, flags } => {
                self.privileged(&event, at_ms, "mount", format!("{source} on {target} flags {flags:#x}"))
            }
            Action::Umount { target, .. } => self.privileged(&event, at_ms, "umount", target.clone()),
            Action::Privileged { call, args } => {
                let detail = match call {
                    PrivilegedCall::Ptrace => format!("request {} pid {}", args[0], args[1] as i64),
                    PrivilegedCall::Namespace => format!("flags {:#x}", args[0]),
                    PrivilegedCall::SetId => format!("{} {} {}", args[0] as i32, args[1] as i32, args[2] as i32),
                    _ => format!("{:#x}", args[0]),
                };
                self.privileged(&event, at_ms, call.name(), detail);
            }
        }
    }
}

/// Network attempts the kernel saw that the program's own report (its Python audit hook's lines)
/// does not mention: each is a finding. An address counts as mentioned when a reported line
/// names its IP (or unix path) and its port.
pub fn unreported_network(observed: &Observed, reported: &[String]) -> Vec<String> {
    let mut findings = Vec::new();
    for attempt in observed
        .network
        .iter()
        .filter(|n| n.call != "socket" && !n.address.is_empty())
    {
        let mentioned = match attempt.address.rsplit_once(':') {
            Some((host, port)) if attempt.family.starts_with("inet") => {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                reported.iter().any(|line| line.contains(host) && line.contains(port))
            }
            _ => reported
                .iter()
                .any(|line| line.contains(attempt.address.trim_start_matches("unix:"))),
        };
        if !mentioned && findings.len() < MAX_FINDINGS {
            findings.push(format!(
                "{} {} ({}) seen by the kernel, not in the program's own report",
                attempt.call, attempt.address, attempt.result
            ));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(call: &str, family: &str, address: &str) -> ObservedNetwork {
        ObservedNetwork {
            call: call.into(),
            family: family.into(),
            address: address.into(),
            count: 1,
            failed: 1,
            first_ms: 0,
            result: "ENETUNREACH".into(),
        }
    }

    #[test]
    fn an_attempt_the_hook_did_not_report_is_a_finding() {
        let observed = Observed {
            network: vec![
                attempt("connect", "inet", "10.1.2.3:8080"),
                attempt("send", "inet", "10.9.9.9:53"),
                attempt("socket", "inet", ""),
            ],
            ..Observed::default()
        };
        let reported = vec!["socket.connect ((<socket>, ('10.1.2.3', 8080)),)".to_string()];
        let findings = unreported_network(&observed, &reported);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].contains("10.9.9.9:53"));
        assert_eq!(unreported_network(&observed, &[]).len(), 2);
    }

    #[test]
    fn bounded_lists_count_what_they_cut() {
        let mut keyed = Keyed::new(2);
        for i in 0..5 {
            if let Some((count, _)) = keyed.entry((i.to_string(), String::new()), || 0u64) {
                *count += 1;
            }
        }
        assert_eq!((keyed.entries.len(), keyed.omitted), (2, 3));
    }

    #[test]
    fn open_flags_read_as_access() {
        assert_eq!(open_access(libc::O_RDONLY as u64), "read");
        assert_eq!(
            open_access((libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC) as u64),
            "create"
        );
        assert_eq!(open_access((libc::O_RDWR) as u64), "write");
    }
}
