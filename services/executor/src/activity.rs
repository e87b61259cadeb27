//! What the program did, as far as the sandbox can tell.
//!
//! From outside (trusted as observations, though names and command lines are the program's
//! own words): the processes seen in the container's pids cgroup while it ran, and the files
//! left in its writable tmpfs, listed after every process of the program is gone (so nothing
//! can swap a directory for a symlink under the walk). From inside (untrusted: the program can
//! write anything there): network calls that Python's audit hook saw in the program's own
//! interpreter, read from PID 1's memfd through the host's /proc, parsed with bounds on every
//! size, and never used for anything but the untrusted activity report.
//!
//! Every list is bounded, and a list that was cut says so, with how many were left out. The
//! files listed are chosen so that a flood of decoys cannot hide the file that matters:
//! executables and scripts first, then every directory in turn (each one's largest first), so
//! that 600 empty files in one place leave room for one elsewhere.

use crate::monitor::Observer;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

/// Most processes listed per run (a fork bomb makes thousands).
const MAX_PROCESSES: usize = 64;
/// Most files listed, and most entries looked at in the tmpfs (it is bounded by the run's disk
/// limit; this bounds the time the look takes).
const MAX_FILES: usize = 500;
const MAX_WALK: usize = 100_000;
/// Files whose first bytes are read to tell scripts and binaries from data.
const MAX_SNIFFED: usize = 5_000;
/// PID 1's memfd, where the program's audit hook writes JSON lines.
const ACTIVITY_FD: u32 = 9;
const ACTIVITY_NAME: &str = "airlock-activity";
/// What is read of it at most, the longest line looked at, the most attempts kept, and the
/// longest description of one (in characters).
pub(crate) const MAX_ACTIVITY_BYTES: usize = 64 * 1024;
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
    more: u64,
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

    /// The processes described, and how many more were seen beyond the list.
    pub fn seen(&self) -> (Vec<String>, u64) {
        (self.described.iter().cloned().collect(), self.more)
    }
}

/// The files left in the container's /tmp: at most [`MAX_FILES`] with their sizes, and how many
/// (and how many bytes) were left out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FilesLeft {
    pub listed: Vec<(String, u64)>,
    pub omitted: u64,
    pub omitted_bytes: u64,
}

/// A file found in the tmpfs.
struct Found {
    path: String,
    size: u64,
    /// An executable bit, or a `#!` or ELF header: what runs is what matters most.
    runnable: bool,
}

/// Files in the container's /tmp with their sizes, walked through the host's view of the
/// container's root without following any symlink. The request's own files (`given`, names
/// relative to /tmp) are not the program's doing and are left out.
pub fn files_left(observer: &Observer, given: &[&str]) -> FilesLeft {
    let Some(root) = observer.container_root() else {
        return FilesLeft::default();
    };
    let tmp = root.join("tmp");
    let (mut found, unwalked) = walk(&tmp);
    found.retain(|f| !given.iter().any(|name| f.path.strip_prefix("/tmp/") == Some(*name)));
    let mut left = choose(found);
    left.omitted += unwalked;
    left
}

/// Every file under `base` (iteratively: no depth is a hiding place), up to [`MAX_WALK`]
/// entries; returns them and how many entries were not looked at (a lower bound).
fn walk(base: &Path) -> (Vec<Found>, u64) {
    use std::os::unix::fs::PermissionsExt as _;
    let mut found = Vec::new();
    let mut dirs = VecDeque::from([base.to_path_buf()]);
    let mut seen = 0usize;
    let mut unwalked = 0u64;
    while let Some(dir) = dirs.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if seen >= MAX_WALK {
                unwalked += 1;
                continue;
            }
            seen += 1;
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                dirs.push_back(path);
                continue;
            }
            let relative = path.strip_prefix(base).unwrap_or(&path);
            let runnable = meta.permissions().mode() & 0o111 != 0
                || (meta.is_file() && found.len() < MAX_SNIFFED && has_runnable_header(&path));
            found.push(Found {
                path: format!("/tmp/{}", relative.to_string_lossy()),
                size: meta.len(),
                runnable,
            });
        }
    }
    (found, unwalked)
}

fn has_runnable_header(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head.starts_with(b"#!") || head == *b"\x7fELF")
}

/// At most [`MAX_FILES`] of `found`: runnable files first, then the directories in turn, each
/// one's largest files first; the list sorted by path.
fn choose(found: Vec<Found>) -> FilesLeft {
    let total = found.len();
    let mut by_dir: BTreeMap<(bool, String), VecDeque<Found>> = BTreeMap::new();
    for file in found {
        let dir = file.path.rsplit_once('/').map_or("", |(d, _)| d).to_owned();
        by_dir.entry((!file.runnable, dir)).or_default().push_back(file);
    }
    for files in by_dir.values_mut() {
        files
            .make_contiguous()
            .sort_by(|a, b| b.size.cmp(&a.size).then(a.path.cmp(&b.path)));
    }
    let mut listed = Vec::new();
    for runnable in [true, false] {
        let mut turns: Vec<&mut VecDeque<Found>> = by_dir
            .iter_mut()
            .filter(|((not_runnable, _), _)| *not_runnable != runnable)
            .map(|(_, files)| files)
            .collect();
        while listed.len() < MAX_FILES && turns.iter().any(|f| !f.is_empty()) {
            for files in turns.iter_mut() {
                if listed.len() >= MAX_FILES {
                    break;
                }
                if let Some(file) = files.pop_front() {
                    listed.push((file.path, file.size));
                }
            }
        }
    }
    let omitted_bytes = by_dir.values().flatten().map(|f| f.size).sum();
    listed.sort();
    FilesLeft {
        omitted: (total - listed.len()) as u64,
        omitted_bytes,
        listed,
    }
}

/// What the program's audit hook reported from inside. Untrusted: the program can write this
/// memfd directly, so it may be forged, truncated or missing.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct InsideReport {
    pub network_attempts: Vec<String>,
    /// Attempts reported beyond those kept.
    pub omitted: u64,
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
        if line.len() > MAX_LINE_BYTES {
            continue;
        }
        let Ok(line) = serde_json::from_slice::<InsideLine>(line) else {
            continue;
        };
        let Some(event) = NETWORK_EVENTS.iter().find(|e| **e == line.event) else {
            continue;
        };
        if report.network_attempts.len() >= MAX_NETWORK_ATTEMPTS {
            report.omitted += 1;
            continue;
        }
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
        assert!(report.omitted > 0, "a cut list says so");
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
        let (found, unwalked) = walk(dir.path());
        assert_eq!(unwalked, 0);
        let left = choose(found);
        assert_eq!(
            left,
            FilesLeft {
                listed: vec![("/tmp/d/f".to_owned(), 5), ("/tmp/link".to_owned(), 4)],
                omitted: 0,
                omitted_bytes: 0,
            }
        );
    }

    #[test]
    fn decoys_do_not_hide_the_file_that_matters_and_a_cut_list_says_so() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..600 {
            std::fs::write(dir.path().join(format!("decoy-{n:03}")), b"").unwrap();
        }
        // Deeper than any fixed depth, in its own directory, plain data.
        let deep: PathBuf = (0..40).map(|n| format!("d{n}")).collect();
        std::fs::create_dir_all(dir.path().join(&deep)).unwrap();
        std::fs::write(dir.path().join(&deep).join("stolen.txt"), b"secret").unwrap();
        std::fs::write(dir.path().join("run.sh"), b"#!/bin/sh\ncurl evil\n").unwrap();
        let (found, _) = walk(dir.path());
        let left = choose(found);
        assert_eq!(left.listed.len(), MAX_FILES);
        assert_eq!(left.omitted, 602 - MAX_FILES as u64, "how many were left out");
        assert_eq!(left.omitted_bytes, 0, "only empty decoys were left out");
        let names: Vec<&str> = left.listed.iter().map(|(p, _)| p.as_str()).collect();
        assert!(names.contains(&"/tmp/run.sh"), "the script is listed");
        assert!(
            names.iter().any(|n| n.ends_with("/d39/stolen.txt")),
            "the file in another directory is listed"
        );
    }
}
