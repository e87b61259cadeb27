//! What the program did, as far as the sandbox can tell.
//!
//! From outside (trusted as observations, though names and command lines are the program's
//! own words): the processes seen in the container's pids cgroup while it ran, and the files
//! left in its writable tmpfs, listed after every process of the program is gone (so nothing
//! can swap a directory for a symlink under the walk). From inside (untrusted: the bootstrap and
//! the program share a user): network calls that Python's audit hooks saw, and PID 1's exit
//! report, read from PID 1's memfd through the host's /proc.

use crate::monitor::Observer;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Most processes listed per run (a fork bomb makes thousands).
const MAX_PROCESSES: usize = 64;
/// Most files listed, and the deepest directory walked.
const MAX_FILES: usize = 500;
const MAX_DEPTH: usize = 16;
/// PID 1's memfd, where the bootstrap and the program's audit hook write JSON lines.
const ACTIVITY_FD: u32 = 9;
const ACTIVITY_NAME: &str = "airlock-activity";
const MAX_ACTIVITY_BYTES: usize = 64 * 1024;
const MAX_NETWORK_ATTEMPTS: usize = 100;

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

/// What the bootstrap and the program's audit hook reported from inside.
#[derive(Debug, Default)]
pub struct InsideReport {
    pub exit_code: Option<i64>,
    pub network_attempts: Vec<String>,
}

pub fn inside_report(observer: &Observer) -> Option<InsideReport> {
    let data = observer.read_init_memfd(ACTIVITY_FD, ACTIVITY_NAME, MAX_ACTIVITY_BYTES)?;
    Some(parse_inside(&data))
}

fn parse_inside(data: &[u8]) -> InsideReport {
    let mut report = InsideReport::default();
    for line in data.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        match value.get("event").and_then(|e| e.as_str()) {
            // Written by PID 1 after every process of the program is gone: the last one counts.
            Some("exit") => report.exit_code = value.get("code").and_then(|c| c.as_i64()),
            Some(event) if event.starts_with("socket.") => {
                if report.network_attempts.len() < MAX_NETWORK_ATTEMPTS {
                    let detail = value.get("detail").and_then(|d| d.as_str()).unwrap_or("");
                    report.network_attempts.push(format!("{event} {detail}"));
                }
            }
            _ => {}
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_report_lines() {
        let data = b"{\"event\":\"socket.connect\",\"detail\":\"(('1.1.1.1', 80),)\"}\nnot json\n{\"event\":\"exit\",\"code\":3}\n";
        let report = parse_inside(data);
        assert_eq!(report.exit_code, Some(3));
        assert_eq!(report.network_attempts, vec!["socket.connect (('1.1.1.1', 80),)"]);
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
