//! Watching a container from outside while its program runs.
//!
//! On the host (the default) the executor reads the kernel's own cgroup v1 counters (memory peak,
//! CPU time, pids, fork refusals, OOM kills) every few milliseconds, the writable tmpfs's fill
//! through the container's root in /proc, and the processes in the container's pids cgroup.
//! None of it passes through the container, so the program cannot forge it. An executor without
//! the host's /proc and /sys, or a container under gVisor (whose processes the host cannot see),
//! falls back to the Docker stats API (coarser: no fork refusals, no disk fill, no process list,
//! and one sample a second). Under gVisor, gVisor's own kernel is also asked once a second
//! for the fill of `/tmp` and the number of processes (`inside.rs`).

use crate::config::{HostConfig, Observe};
use crate::docker::ContainerEngine;
use crate::inside::Inside;
use bollard::query_parameters::StatsOptionsBuilder;
use futures::StreamExt;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One look at a container.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reading {
    pub memory_bytes: u64,
    /// Highest memory use since [`Observer::reset_peak`].
    pub peak_memory_bytes: u64,
    pub cpu_ns: u64,
    pub pids: u32,
    pub peak_pids: u32,
    /// Forks the pids limit refused (cgroup `pids.events` "max").
    pub fork_failures: u64,
    /// Processes the kernel's OOM killer killed in the container.
    pub oom_kills: u64,
    /// Bytes used and size of the writable tmpfs.
    pub disk: Option<(u64, u64)>,
    /// Under gVisor, the program's processes as gVisor's kernel counts them (zombies included;
    /// `pids` is then the host's threads of the sandbox), when it was asked.
    pub sandbox_processes: Option<u32>,
    /// Under gVisor, the host threads in the sandbox's pids cgroup now, when visible.
    pub sandbox_threads: Option<u64>,
}

pub enum Observer {
    Cgroup(CgroupObserver),
    Api(ApiObserver),
}

/// The engine's stats of one container, followed in the background. The engine samples a
/// container once a second (its stats collector's tick) and a request for one sample waits for
/// the next tick, even with `one-shot`: asked on each look, every look would stall the watch
/// (output included) for up to a second. Followed as a stream instead, a look takes the latest
/// sample at once.
pub struct ApiObserver {
    latest: tokio::sync::watch::Receiver<Option<Reading>>,
    follower: tokio::task::AbortHandle,
    /// Under gVisor, the host's pids cgroup of the sandbox, where the kernel counts the threads
    /// it refused gVisor at the pids limit (each process of the program needs some).
    sandbox_pids: Option<PathBuf>,
    /// Under gVisor, what its own kernel says of `/tmp` and the processes (see `inside.rs`).
    inside: Option<(tokio::sync::watch::Receiver<Option<Inside>>, tokio::task::AbortHandle)>,
}

impl Drop for ApiObserver {
    fn drop(&mut self) {
        self.follower.abort();
        if let Some((_, task)) = &self.inside {
            task.abort();
        }
    }
}

impl ApiObserver {
    /// Starts following the container's stats (needs a Tokio runtime).
    /// `look_inside`: under gVisor, the program's pids limit, for the looks inside (no look while
    /// the host threads are past what that many processes need), and the processes of Airlock's
    /// own there besides PID 1, which the looks leave out of the program's count.
    fn follow(
        engine: &ContainerEngine,
        id: &str,
        sandbox_pids: Option<PathBuf>,
        look_inside: Option<(u32, u32)>,
    ) -> ApiObserver {
        let inside = look_inside.map(|(pids, helpers)| {
            let threads_allowed = u64::from(crate::docker::runsc_host_threads_for(pids));
            let host_pids = sandbox_pids.clone().map(|cgroup| (cgroup, threads_allowed));
            crate::inside::follow(engine, id, host_pids, helpers)
        });
        let (send, latest) = tokio::sync::watch::channel(None);
        let (engine, id) = (engine.clone(), id.to_owned());
        let follower = tokio::spawn(async move {
            let mut stream = engine
                .docker
                .stats(&id, Some(StatsOptionsBuilder::default().stream(true).build()));
            while let Some(Ok(stats)) = stream.next().await {
                // A container that is not running is sampled as a name alone: no reading.
                if let Some(reading) = reading_of(stats) {
                    send.send_replace(Some(reading));
                }
            }
        })
        .abort_handle();
        ApiObserver {
            latest,
            follower,
            sandbox_pids,
            inside,
        }
    }

    /// The latest sample, with the kernel's count of refused forks read now: a refusal ends a
    /// gVisor sandbox at once, often before the engine sampled it at all.
    fn read(&self) -> Option<Reading> {
        let mut latest = *self.latest.borrow();
        let refused = self
            .sandbox_pids
            .as_ref()
            .and_then(|pids| read_keyed(&pids.join("pids.events"), "max"))
            .unwrap_or(0);
        if refused > 0 {
            latest = Some(Reading {
                fork_failures: refused,
                ..latest.unwrap_or_default()
            });
        }
        // Read whether or not the engine has sampled the sandbox yet: its samples come from
        // gVisor (`runsc events`), which a fork bomb can hold up for the whole run, and the
        // threads are then the only count of the program's processes left.
        let threads = self
            .sandbox_pids
            .as_ref()
            .and_then(|pids| read_u64(&pids.join("pids.current")));
        if let Some(threads) = threads {
            latest = Some(Reading {
                sandbox_threads: Some(threads),
                ..latest.unwrap_or_default()
            });
        }
        let inside = self.inside.as_ref().and_then(|(answer, _)| *answer.borrow());
        match inside {
            Some(inside) => Some(Reading {
                disk: Some(inside.disk),
                sandbox_processes: Some(inside.processes),
                ..latest.unwrap_or_default()
            }),
            None => latest,
        }
    }
}

/// A reading from one of the engine's samples; `None` for an empty one.
fn reading_of(stats: bollard::models::ContainerStatsResponse) -> Option<Reading> {
    let memory = stats.memory_stats?;
    let cpu = stats.cpu_stats?;
    let pids = stats
        .pids_stats
        .and_then(|p| p.current)
        .map(|p| u32::try_from(p).unwrap_or(u32::MAX))
        .unwrap_or(0);
    let usage = memory.usage?;
    Some(Reading {
        memory_bytes: usage,
        peak_memory_bytes: memory.max_usage.unwrap_or(usage),
        cpu_ns: cpu.cpu_usage.and_then(|u| u.total_usage).unwrap_or(0),
        pids,
        peak_pids: pids,
        fork_failures: 0,
        oom_kills: 0,
        disk: None,
        sandbox_processes: None,
        sandbox_threads: None,
    })
}

pub struct CgroupObserver {
    memory: PathBuf,
    cpuacct: PathBuf,
    pids: PathBuf,
    /// PID 1's directory in the host's /proc.
    init: PathBuf,
    init_pid: u32,
    /// The container's root as the host sees it (`/proc/PID/root`).
    root: PathBuf,
    proc_root: PathBuf,
}

/// What PID 1 shows once every process of the program is gone: the program's exit status and
/// the token of the end marker it will write, as its own name (`CODE:TOKEN`, see `_park` in
/// `bootstrap.py`). A process can rename only itself, so the program cannot write this.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    pub exit_code: i64,
    pub token: String,
}

impl Finished {
    /// Reads a `CODE:TOKEN` name: three digits, a colon, eleven base32 letters.
    fn parse(name: &str) -> Option<Finished> {
        let (code, token) = name.trim_end_matches('\n').split_once(':')?;
        let valid_code = code.len() == 3 && code.bytes().all(|b| b.is_ascii_digit());
        let valid_token = token.len() == 11
            && token
                .bytes()
                .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b));
        if !(valid_code && valid_token) {
            return None;
        }
        Some(Finished {
            exit_code: code.parse().ok()?,
            token: token.to_owned(),
        })
    }
}

impl Observer {
    /// The kernel's counters when they can be found for this container, the API otherwise.
    pub fn for_container(host: &HostConfig, engine: &ContainerEngine, id: &str, host_pid: Option<u32>) -> Observer {
        if host.observe == Observe::Auto
            && let Some(pid) = host_pid
        {
            match CgroupObserver::find(host, pid) {
                Some(observer) => return Observer::Cgroup(observer),
                None => tracing::debug!(container = %id, "cgroup files not found; using the stats API"),
            }
        }
        Observer::Api(ApiObserver::follow(engine, id, None, None))
    }

    /// A container under gVisor, whose host processes are gVisor's own: the engine's stats,
    /// the fork refusals and threads the host's pids cgroup counts for the sandbox
    /// (`sandbox_pid`, when the host's files are visible), and gVisor's own answers about a
    /// program allowed `pids` processes (`inside.rs`) beside `helpers` of Airlock's own.
    pub fn for_gvisor(
        host: &HostConfig,
        engine: &ContainerEngine,
        id: &str,
        sandbox_pid: Option<u32>,
        pids: u32,
        helpers: u32,
    ) -> Observer {
        let sandbox_pids = sandbox_pid
            .filter(|_| host.observe == Observe::Auto)
            .and_then(|pid| CgroupObserver::find(host, pid))
            .map(|cgroup| cgroup.pids);
        Observer::Api(ApiObserver::follow(engine, id, sandbox_pids, Some((pids, helpers))))
    }

    pub fn is_host(&self) -> bool {
        matches!(self, Observer::Cgroup(_))
    }

    /// Starts the memory peak afresh, so a warm container's idle interpreter history does not count.
    pub fn reset_peak(&self) {
        if let Observer::Cgroup(c) = self
            && let Err(error) = std::fs::write(c.memory.join("memory.max_usage_in_bytes"), "0")
        {
            tracing::debug!(%error, "resetting the memory peak");
        }
    }

    /// `None` when the container is gone (its cgroup removed) or, through the API, when the
    /// engine has not sampled it yet.
    pub async fn read(&self) -> Option<Reading> {
        match self {
            Observer::Cgroup(c) => c.read(),
            Observer::Api(api) => api.read(),
        }
    }

    /// Host pids of the processes in the container now (empty through the API).
    pub fn processes(&self) -> Vec<u32> {
        match self {
            Observer::Cgroup(c) => std::fs::read_to_string(c.pids.join("cgroup.procs"))
                .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
                .unwrap_or_default(),
            Observer::Api(_) => vec![],
        }
    }

    /// The executable a host process runs now; it changes when the process calls exec.
    pub fn process_image(&self, pid: u32) -> Option<PathBuf> {
        let Observer::Cgroup(c) = self else { return None };
        std::fs::read_link(c.proc_root.join(pid.to_string()).join("exe")).ok()
    }

    /// What a host process is: its executable (the kernel's word, from `process_image`) and its
    /// command line (which the process can rewrite).
    pub fn describe_process(&self, pid: u32, image: &Path) -> Option<String> {
        let Observer::Cgroup(c) = self else { return None };
        let cmdline = std::fs::read(c.proc_root.join(pid.to_string()).join("cmdline")).unwrap_or_default();
        let cmdline: Vec<u8> = cmdline
            .iter()
            .take(240)
            .map(|&b| if b == 0 { b' ' } else { b })
            .collect();
        Some(format!(
            "{}: {}",
            image.display(),
            String::from_utf8_lossy(&cmdline).trim_end()
        ))
    }

    /// The container's root as the host sees it, for the post-mortem look at its tmpfs.
    pub fn container_root(&self) -> Option<&Path> {
        match self {
            Observer::Cgroup(c) => Some(&c.root),
            Observer::Api(_) => None,
        }
    }

    /// Whether the program is over, as the kernel shows it from the host: PID 1 named itself
    /// with the program's exit status and a token, and the container's pids cgroup holds PID 1
    /// alone. Always `None` through the API (the end is then the container's stop).
    pub fn finished(&self) -> Option<Finished> {
        let Observer::Cgroup(c) = self else { return None };
        let finished = Finished::parse(&std::fs::read_to_string(c.init.join("comm")).ok()?)?;
        (self.processes() == [c.init_pid]).then_some(finished)
    }

    /// Signals PID 1 straight from the host through a pidfd (no round trip through the engine),
    /// once it is sure the pid is still this container's finished PID 1; `false` when that
    /// cannot be done here (the caller then asks the engine).
    pub fn signal_init(&self, signal: libc::c_int) -> bool {
        let Observer::Cgroup(c) = self else { return false };
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, c.init_pid as libc::pid_t, 0) };
        let Ok(fd) = libc::c_int::try_from(fd) else {
            return false;
        };
        if fd < 0 {
            return false;
        }
        use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
        // SAFETY: `fd` was just returned by pidfd_open and is owned by nothing else.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd) };
        // The pidfd pins the process: if the pid was reused before it was opened, the check
        // below fails; after it, the signal can only reach the process checked.
        if self.finished().is_none() {
            return false;
        }
        // SAFETY: a valid pidfd, a signal number, no siginfo, no flags.
        let sent = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        sent == 0
    }

    /// An open file of PID 1, by the name its memfd was created with (host only).
    pub fn read_init_memfd(&self, fd: u32, name: &str, max: usize) -> Option<Vec<u8>> {
        let Observer::Cgroup(c) = self else { return None };
        let path = c.init.join("fd").join(fd.to_string());
        let target = std::fs::read_link(&path).ok()?;
        if !target.to_string_lossy().starts_with(&format!("/memfd:{name}")) {
            return None;
        }
        use std::io::Read;
        let mut data = Vec::new();
        std::fs::File::open(&path)
            .ok()?
            .take(max as u64)
            .read_to_end(&mut data)
            .ok()?;
        Some(data)
    }
}

impl CgroupObserver {
    fn find(host: &HostConfig, pid: u32) -> Option<CgroupObserver> {
        let proc_dir = host.proc_root.join(pid.to_string());
        let cgroups = std::fs::read_to_string(proc_dir.join("cgroup")).ok()?;
        let mut memory = None;
        let mut cpuacct = None;
        let mut pids = None;
        for line in cgroups.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            let relative = path.trim_start_matches('/');
            let dir = |controller: &str| -> Option<PathBuf> {
                [controller, controllers]
                    .iter()
                    .map(|mount| host.cgroup_root.join(mount).join(relative))
                    .find(|p| p.is_dir())
            };
            let list: BTreeSet<&str> = controllers.split(',').collect();
            if list.contains("memory") {
                memory = dir("memory");
            }
            if list.contains("cpuacct") {
                cpuacct = dir("cpuacct");
            }
            if list.contains("pids") {
                pids = dir("pids");
            }
        }
        Some(CgroupObserver {
            memory: memory?,
            cpuacct: cpuacct?,
            pids: pids?,
            root: proc_dir.join("root"),
            init: proc_dir,
            init_pid: pid,
            proc_root: host.proc_root.clone(),
        })
    }

    fn read(&self) -> Option<Reading> {
        let memory_bytes = read_u64(&self.memory.join("memory.usage_in_bytes"))?;
        let peak_memory_bytes = read_u64(&self.memory.join("memory.max_usage_in_bytes")).unwrap_or(memory_bytes);
        let cpu_ns = read_u64(&self.cpuacct.join("cpuacct.usage")).unwrap_or(0);
        let pids = read_u64(&self.pids.join("pids.current")).unwrap_or(0);
        let peak_pids = read_u64(&self.pids.join("pids.peak")).unwrap_or(pids);
        let fork_failures = read_keyed(&self.pids.join("pids.events"), "max").unwrap_or(0);
        let oom_kills = read_keyed(&self.memory.join("memory.oom_control"), "oom_kill").unwrap_or(0);
        Some(Reading {
            memory_bytes,
            peak_memory_bytes,
            cpu_ns,
            pids: u32::try_from(pids).unwrap_or(u32::MAX),
            peak_pids: u32::try_from(peak_pids).unwrap_or(u32::MAX),
            fork_failures,
            oom_kills,
            disk: statvfs_used(&self.root.join("tmp")),
            sandbox_processes: None,
            sandbox_threads: None,
        })
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The value of `key` in a "key value" per line file.
fn read_keyed(path: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// Bytes used and total size of the filesystem at `path`.
fn statvfs_used(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is a valid NUL-terminated string and `stat` a writable statvfs.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
    if rc != 0 {
        return None;
    }
    let block = stat.f_frsize;
    let size = stat.f_blocks.saturating_mul(block);
    let used = stat.f_blocks.saturating_sub(stat.f_bfree).saturating_mul(block);
    Some((used, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n").unwrap();
        assert_eq!(read_keyed(&path, "oom_kill"), Some(3));
        assert_eq!(read_keyed(&path, "missing"), None);
        std::fs::write(&path, "max 12\n").unwrap();
        assert_eq!(read_keyed(&path, "max"), Some(12));
    }

    #[test]
    fn the_program_is_over_only_when_pid_1_shows_its_status_and_is_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (init, pids) = (dir.path().join("proc/42"), dir.path().join("pids"));
        std::fs::create_dir_all(&init).unwrap();
        std::fs::create_dir_all(&pids).unwrap();
        let observer = Observer::Cgroup(CgroupObserver {
            memory: dir.path().into(),
            cpuacct: dir.path().into(),
            pids: pids.clone(),
            root: init.join("root"),
            init: init.clone(),
            init_pid: 42,
            proc_root: dir.path().join("proc"),
        });
        let state = |comm: &str, procs: &str| {
            std::fs::write(init.join("comm"), comm).unwrap();
            std::fs::write(pids.join("cgroup.procs"), procs).unwrap();
            observer.finished()
        };
        let token = "abcdefgh234".to_owned();
        assert_eq!(
            state("003:abcdefgh234\n", "42\n"),
            Some(Finished { exit_code: 3, token })
        );
        assert_eq!(
            state("python3\n", "42\n"),
            None,
            "PID 1 alone before the job or while it forks"
        );
        assert_eq!(
            state("000:abcdefgh234\n", "42\n43\n"),
            None,
            "another process is still there"
        );
        for name in [
            "03:abcdefgh234",
            "003:abcdefgh2345",
            "003:ABCDEFGH234",
            "003:abcdefgh231",
            "x03:abcdefgh234",
        ] {
            assert_eq!(state(name, "42\n"), None, "{name}");
        }
    }

    #[test]
    fn statvfs_of_root() {
        let (used, size) = statvfs_used(Path::new("/")).unwrap();
        assert!(size > 0 && used <= size);
    }
}
