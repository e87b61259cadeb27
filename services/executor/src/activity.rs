//! What the program did, as far as the sandbox can tell.
//!
//! From outside (trusted as observations, though names and command lines are the program's
//! own words): the processes seen in the container's pids cgroup while it ran, and the files
//! left in its writable tmpfs, listed after every process of the program is gone (so nothing
//! can swap a directory for a symlink under the walk). From inside (untrusted: the program can
//! write anything there): network calls that Python's audit hook saw in the program's own
//! interpreter, read from PID 1's memfd through the host's /proc, parsed with bounds on every
//! size, and never used for anything but the untrusted activity report.

use crate::monitor::Observer;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Most processes listed per run (a fork bomb makes thousands).
const MAX_PROCESSES: usize = 64;
/// Most files listed, and the deepest directory walked.
const MAX_FILES: usize = 500;
const MAX_DEPTH: usize = 16;
/// PID 1's memfd, where the program's audit hook writes JSON lines.
const ACTIVITY_FD: u32 = 9;
const ACTIVITY_NAME: &str = "airlock-activity";
/// What is read of it at most, the longest line looked at, the most attempts kept, and the
/// longest description of one (in characters).
const MAX_ACTIVITY_BYTES: usize = 64 * 1024;
const MAX_LINE_BYTES: usize = 4096;
const MAX_NETWORK_ATTEMPTS: usize = 100;
const MAX_DETAIL_CHARS: usize = 200;
/// The audit events the bootstrap's hook records; any other name is not from the hook.
const NETWORK_EVENTS: [&str; 7] = [
    "socket.connect",
    "socket.sendto",
    "socket.sendmsg",
    "socket.bind",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
];

/// Processes seen in the container, by host pid.
#[derive(Default)]
pub struct Processes {
    /// The executable each pid was last seen running: a child is often first seen between its
    /// fork and its exec, still running its parent's program, and is described again once it
    /// runs its own.
    known: HashMap<u32, PathBuf>,
    ignored: HashSet<u32>,
    described: BTreeSet<String>,
    more: usize,
}

impl Processes {
    /// Leaves a pid out (the bootstrap itself).
    pub fn ignore(&mut self, pid: u32) {
        self.ignored.insert(pid);
    }

    pub fn observe(&mut self, observer: &Observer) {
        for pid in observer.processes() {
            if self.ignored.contains(&pid) {
                continue;
            }
            // Once the list is full only new pids are counted, so a fork bomb costs one
            // cgroup read per tick, not a look at each of its processes.
            let full = self.described.len() >= MAX_PROCESSES;
            if full && self.known.contains_key(&pid) {
                continue;
            }
            let Some(image) = observer.process_image(pid) else {
                continue;
            };
            if self.known.get(&pid) == Some(&image) {
                continue;
            }
            let Some(description) = observer.describe_process(pid, &image) else {
                continue;
            };
            self.known.insert(pid, image);
            if !full {
                self.described.insert(description);
            } else if !self.described.contains(&description) {
                self.more += 1;
            }
        }
    }

    pub fn seen(&self) -> Vec<String> {
        let mut list: Vec<String> = self.described.iter().cloned().collect();
        if self.more > 0 {
            list.push(format!("... and {} more", self.more));
        }
        list
    }
}

/// Files in the container's /tmp with their sizes, walked through the host's view of the
/// container's root without following any symlink.
pub fn files_left(observer: &Observer) -> Vec<(String, u64)> {
    let Some(root) = observer.container_root() else {
        return vec![];
    };
    let tmp = root.join("tmp");
    let mut files = Vec::new();
    walk(&tmp, &tmp, 0, &mut files);
    files.sort();
    files
}

fn walk(base: &Path, dir: &Path, depth: usize, files: &mut Vec<(String, u64)>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if files.len() >= MAX_FILES {
            return;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let relative = path.strip_prefix(base).unwrap_or(&path);
        let name = format!("/tmp/{}", relative.to_string_lossy());
        if meta.is_dir() {
            walk(base, &path, depth + 1, files);
        } else {
            files.push((name, meta.len()));
        }
    }
}

/// What the program's audit hook reported from inside. Untrusted: the program can write this
/// memfd directly, so it may be forged, truncated or missing.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct InsideReport {
    pub network_attempts: Vec<String>,
}

pub fn inside_report(observer: &Observer) -> Option<InsideReport> {
    let data = observer.read_init_memfd(ACTIVITY_FD, ACTIVITY_NAME, MAX_ACTIVITY_BYTES)?;
    Some(parse_inside(&data))
}

#[derive(serde::Deserialize)]
struct InsideLine<'a> {
    #[serde(borrow)]
    event: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    detail: std::borrow::Cow<'a, str>,
}

/// Reads the hook's JSON lines from at most [`MAX_ACTIVITY_BYTES`]: lines that are too long, not
/// JSON of the hook's shape, or name another event are skipped; at most
/// [`MAX_NETWORK_ATTEMPTS`] are kept, each cut to [`MAX_DETAIL_CHARS`] characters.
pub fn parse_inside(data: &[u8]) -> InsideReport {
    let data = &data[..data.len().min(MAX_ACTIVITY_BYTES)];
    let mut report = InsideReport::default();
    for line in data.split(|&b| b == b'\n') {
        if report.network_attempts.len() >= MAX_NETWORK_ATTEMPTS {
            break;
        }
        if line.len() > MAX_LINE_BYTES {
            continue;
        }
        let Ok(line) = serde_json::from_slice::<InsideLine>(line) else {
            continue;
        };
        let Some(event) = NETWORK_EVENTS.iter().find(|e| **e == line.event) else {
            continue;
        };
        let detail: String = line.detail.chars().take(MAX_DETAIL_CHARS).collect();
        report.network_attempts.push(format!("{event} {detail}"));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_report_lines() {
        let data = b"{\"event\":\"socket.connect\",\"detail\":\"(('1.1.1.1', 80),)\"}\nnot json\n{\"event\":\"exit\",\"code\":0}\n";
        let report = parse_inside(data);
        assert_eq!(report.network_attempts, vec!["socket.connect (('1.1.1.1', 80),)"]);
    }

    #[test]
    fn a_forged_inside_report_is_bounded() {
        let line = format!("{{\"event\":\"socket.bind\",\"detail\":\"{}\"}}\n", "é".repeat(300));
        let report = parse_inside(line.repeat(200).as_bytes());
        assert_eq!(report.network_attempts.len(), MAX_NETWORK_ATTEMPTS);
        assert!(
            report
                .network_attempts
                .iter()
                .all(|a| a.chars().count() == "socket.bind ".len() + MAX_DETAIL_CHARS)
        );
        let long = format!(
            "{{\"event\":\"socket.bind\",\"detail\":\"{}\"}}\n",
            "x".repeat(MAX_LINE_BYTES)
        );
        assert_eq!(
            parse_inside(long.as_bytes()),
            InsideReport::default(),
            "an over-long line is skipped"
        );
        let foreign = b"{\"event\":\"socket.anything\",\"detail\":\"x\"}\n";
        assert_eq!(
            parse_inside(foreign),
            InsideReport::default(),
            "only the hook's own events count"
        );
    }

    #[test]
    fn walk_lists_files_not_symlink_targets() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/f"), b"12345").unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
        let mut files = Vec::new();
        walk(dir.path(), dir.path(), 0, &mut files);
        files.sort();
        assert_eq!(files, vec![("/tmp/d/f".to_owned(), 5), ("/tmp/link".to_owned(), 4)]);
    }
}
