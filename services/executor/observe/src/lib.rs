//! What sandboxed processes do, observed by the kernel.
//!
//! [`Observer::start`] loads the BPF programs of `bpf/observe.bpf.c` (syscall tracepoints for
//! exec, exit, file opens, deletions, renames, mkdir, chmod, chown, sockets, connect, bind, sends,
//! ptrace, set*id, capset, mount, module and BPF loading, io_uring, unshare/setns) and attaches
//! them. They record only tasks whose pid namespace, or an ancestor of it, is watched:
//! [`Observer::watch`] adds a namespace (a container's, from its init process) with a sink that
//! receives its [`Event`]s; [`Watch::finish`] stops watching, delivers what is still in the ring
//! buffer and returns the sink with the number of events the kernel could not deliver.
//!
//! Without BTF, BPF or the privilege to load programs, [`Observer::start`] fails with
//! [`ObserveError::Unavailable`] and a reason fit to show a user.

mod event;

pub use event::{AT_FDCWD, Action, Event, PrivilegedCall, SocketAddress};

use aya::maps::{HashMap as BpfHashMap, MapData, RingBuf};
use aya::programs::TracePoint;
use aya::{Ebpf, EbpfLoader};
use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/observe.bpf.o"));

const BTF_PATH: &str = "/sys/kernel/btf/vmlinux";
const TRACEFS: &str = "/sys/kernel/tracing";

#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// The kernel cannot observe here (no BTF, no BPF, not privileged, no tracefs).
    #[error("kernel observation unavailable: {reason}")]
    Unavailable { reason: String },
    #[error("pid namespace {namespace} is already watched")]
    AlreadyWatched { namespace: u32 },
    #[error("cannot read the pid namespace of process {pid}: {source}")]
    Namespace { pid: u32, source: std::io::Error },
    #[error("the watched-namespace map refused {namespace}: {source}")]
    Map {
        namespace: u32,
        source: aya::maps::MapError,
    },
}

/// A pid namespace, by the inode of its nsfs file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PidNamespace(pub u32);

impl PidNamespace {
    /// The pid namespace of host process `pid` (`/proc/<pid>/ns/pid`).
    pub fn of_process(pid: u32) -> Result<PidNamespace, ObserveError> {
        Self::of_process_in(Path::new("/proc"), pid)
    }

    /// As [`PidNamespace::of_process`], with the host's /proc mounted at `proc_root`.
    pub fn of_process_in(proc_root: &Path, pid: u32) -> Result<PidNamespace, ObserveError> {
        let metadata = std::fs::metadata(proc_root.join(pid.to_string()).join("ns/pid"))
            .map_err(|source| ObserveError::Namespace { pid, source })?;
        // nsfs inode numbers are 32-bit (ns_common.inum is an unsigned int).
        Ok(PidNamespace(metadata.ino() as u32))
    }
}

/// Receives the events of one watched namespace, on the observer's reader thread (or the thread
/// finishing the watch): keep it quick and bounded.
pub trait EventSink: Send + 'static {
    fn event(&mut self, event: Event);
}

type SharedSink = Arc<Mutex<dyn EventSink>>;

struct Shared {
    watched: Mutex<BpfHashMap<MapData, u32, u64>>,
    ring: Mutex<RingBuf<MapData>>,
    sinks: Mutex<HashMap<u32, SharedSink>>,
    /// Records that were not ours (size or kind): a BPF/loader mismatch, reported by `stats`.
    malformed: AtomicU64,
    delivered: AtomicU64,
    stop: AtomicBool,
    /// The programs and their links: detached when the last handle goes.
    _ebpf: Mutex<Ebpf>,
}

fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking sink must not take observation down for every other run.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// Delivers every record in the ring buffer to its namespace's sink.
    fn drain(&self) {
        let mut ring = lock(&self.ring);
        while let Some(item) = ring.next() {
            let Some(event) = event::decode(&item) else {
                self.malformed.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            drop(item);
            let sink = lock(&self.sinks).get(&event.namespace).cloned();
            if let Some(sink) = sink {
                self.delivered.fetch_add(1, Ordering::Relaxed);
                lock(&sink).event(event);
            }
        }
    }
}

/// The loaded, attached programs. Cheap to clone; detached when the last clone is dropped.
#[derive(Clone)]
pub struct Observer {
    shared: Arc<Shared>,
    missing: Arc<Vec<String>>,
}

/// Counters over the observer's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObserverStats {
    pub delivered: u64,
    pub malformed: u64,
    pub watching: usize,
}

fn unavailable(reason: impl Into<String>) -> ObserveError {
    ObserveError::Unavailable { reason: reason.into() }
}

/// Tracepoints are found through tracefs: mount it where the kernel documents it when no one did.
fn ensure_tracefs() -> Result<(), ObserveError> {
    if Path::new(TRACEFS).join("events").is_dir() || Path::new("/sys/kernel/debug/tracing/events").is_dir() {
        return Ok(());
    }
    let target = c"/sys/kernel/tracing";
    // SAFETY: every pointer is a NUL-terminated constant; mount(2) does not keep them.
    let rc = unsafe {
        libc::mount(
            c"tracefs".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(unavailable(format!(
            "tracefs is not mounted at {TRACEFS} and mounting it failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

impl Observer {
    /// Loads and attaches the programs, and starts the thread that reads the ring buffer.
    pub fn start() -> Result<Observer, ObserveError> {
        if !Path::new(BTF_PATH).exists() {
            return Err(unavailable(format!("the kernel has no BTF ({BTF_PATH} is missing)")));
        }
        ensure_tracefs()?;
        let mut ebpf = EbpfLoader::new()
            .load(OBJECT)
            .map_err(|e| unavailable(format!("loading the BPF object failed: {}", error_chain(&e))))?;
        let mut missing = Vec::new();
        let names: Vec<String> = ebpf.programs().map(|(name, _)| name.to_string()).collect();
        for name in names {
            let category = if name.starts_with("sys_") { "syscalls" } else { "sched" };
            if !Path::new(TRACEFS).join("events").join(category).join(&name).exists()
                && !Path::new("/sys/kernel/debug/tracing/events")
                    .join(category)
                    .join(&name)
                    .exists()
            {
                // A syscall this kernel lacks (no module support: no init_module): it cannot
                // be called here either.
                missing.push(name);
                continue;
            }
            let program: &mut TracePoint = ebpf
                .program_mut(&name)
                .ok_or_else(|| unavailable(format!("program {name} vanished")))?
                .try_into()
                .map_err(|e| unavailable(format!("program {name}: {}", error_chain(&e))))?;
            program
                .load()
                .map_err(|e| unavailable(format!("the kernel refused program {name}: {}", error_chain(&e))))?;
            program
                .attach(category, &name)
                .map_err(|e| unavailable(format!("attaching {category}/{name} failed: {}", error_chain(&e))))?;
        }
        let watched = BpfHashMap::try_from(
            ebpf.take_map("watched")
                .ok_or_else(|| unavailable("no map `watched`"))?,
        )
        .map_err(|e| unavailable(format!("map `watched`: {e}")))?;
        let ring = RingBuf::try_from(ebpf.take_map("events").ok_or_else(|| unavailable("no map `events`"))?)
            .map_err(|e| unavailable(format!("map `events`: {e}")))?;
        let shared = Arc::new(Shared {
            watched: Mutex::new(watched),
            ring: Mutex::new(ring),
            sinks: Mutex::new(HashMap::new()),
            malformed: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            _ebpf: Mutex::new(ebpf),
        });
        let fd = lock(&shared.ring).as_raw_fd();
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("observe-ring".into())
            .spawn(move || read_ring(weak, fd))
            .map_err(|e| unavailable(format!("cannot start the ring buffer reader: {e}")))?;
        tracing::info!(missing = ?missing, "kernel observation loaded");
        Ok(Observer {
            shared,
            missing: Arc::new(missing),
        })
    }

    /// The tracepoints this kernel does not have (their syscalls do not exist here).
    pub fn missing_tracepoints(&self) -> &[String] {
        &self.missing
    }

    pub fn stats(&self) -> ObserverStats {
        ObserverStats {
            delivered: self.shared.delivered.load(Ordering::Relaxed),
            malformed: self.shared.malformed.load(Ordering::Relaxed),
            watching: lock(&self.shared.sinks).len(),
        }
    }

    /// Starts recording the processes of `namespace` (and of namespaces nested in it) into
    /// `sink`. Only syscalls entered after this returns are recorded.
    pub fn watch<S: EventSink>(&self, namespace: PidNamespace, sink: S) -> Result<Watch<S>, ObserveError> {
        let sink = Arc::new(Mutex::new(sink));
        {
            let mut sinks = lock(&self.shared.sinks);
            if sinks.contains_key(&namespace.0) {
                return Err(ObserveError::AlreadyWatched { namespace: namespace.0 });
            }
            sinks.insert(namespace.0, sink.clone() as SharedSink);
        }
        if let Err(source) = lock(&self.shared.watched).insert(namespace.0, 0u64, 0) {
            lock(&self.shared.sinks).remove(&namespace.0);
            return Err(ObserveError::Map {
                namespace: namespace.0,
                source,
            });
        }
        Ok(Watch {
            shared: self.shared.clone(),
            namespace,
            sink: Some(sink),
        })
    }
}

/// Follows the error's sources: aya's errors put the kernel's answer (EPERM, the verifier's
/// log) in a source. A verifier log is long: its end (the refusal) is kept.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(next) = source {
        text.push_str(": ");
        text.push_str(&next.to_string());
        source = next.source();
    }
    const KEEP: usize = 800;
    if text.len() > KEEP {
        let mut start = text.len() - KEEP;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text = format!("...{}", &text[start..]);
    }
    text
}

/// Waits for records and delivers them, until the observer is dropped.
fn read_ring(shared: Weak<Shared>, fd: i32) {
    loop {
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; the fd stays open while `shared` can be upgraded (checked
        // right after), and a closed fd only makes poll report POLLNVAL.
        unsafe { libc::poll(&mut poll, 1, 200) };
        let Some(shared) = shared.upgrade() else { return };
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        shared.drain();
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One namespace being watched. Dropping it stops the watch; [`Watch::finish`] also delivers
/// what is left and returns the sink.
pub struct Watch<S: EventSink> {
    shared: Arc<Shared>,
    namespace: PidNamespace,
    sink: Option<Arc<Mutex<S>>>,
}

/// A finished watch: the sink with every event delivered, and the events the kernel dropped
/// because the ring buffer was full (each counted against the namespace it belonged to).
pub struct Finished<S> {
    pub sink: S,
    pub lost: u64,
}

impl<S: EventSink> Watch<S> {
    pub fn namespace(&self) -> PidNamespace {
        self.namespace
    }

    /// Stops watching, delivers the namespace's records still in the ring buffer, and returns
    /// the sink.
    pub fn finish(mut self) -> Finished<S> {
        let lost = self.unwatch();
        self.shared.drain();
        lock(&self.shared.sinks).remove(&self.namespace.0);
        let mut sink = self.sink.take().expect("a watch is finished once");
        // The reader thread may still hold a clone for the event it is delivering: wait it out.
        let sink = loop {
            match Arc::try_unwrap(sink) {
                Ok(mutex) => break mutex.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()),
                Err(still_shared) => {
                    sink = still_shared;
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        };
        Finished { sink, lost }
    }

    /// Removes the namespace from the kernel's map; returns its lost-event count.
    fn unwatch(&self) -> u64 {
        let mut watched = lock(&self.shared.watched);
        let lost = watched.get(&self.namespace.0, 0).unwrap_or(0);
        if let Err(error) = watched.remove(&self.namespace.0) {
            tracing::warn!(namespace = self.namespace.0, %error, "could not stop watching a pid namespace");
        }
        lost
    }
}

impl<S: EventSink> Drop for Watch<S> {
    fn drop(&mut self) {
        if self.sink.is_some() {
            self.unwatch();
            lock(&self.shared.sinks).remove(&self.namespace.0);
        }
    }
}
