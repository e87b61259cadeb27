//! gVisor's own account of a run under runsc: a trace session in the sandbox's kernel, read
//! through gVisor's remote sink, turned into the run's `observed` record.
//!
//! The host's eBPF sees gVisor's processes, never the program's syscalls, which gVisor's kernel
//! serves. That kernel has trace points of its own (`runsc trace`, release 2022-12-19), and a
//! sink that sends them over a unix socket. So, for each runsc container, once it has started
//! and before any job is handed to it (for a warm container, while it waits in the pool):
//!
//! 1. the executor listens on a fresh `SOCK_SEQPACKET` socket of its own, in a directory only
//!    root can enter, one socket per sandbox (as gVisor's sink documentation asks, so that one
//!    sandbox cannot disturb another's record);
//! 2. it runs `runsc --root=<the sandbox's> trace create --config <points> <container>`
//!    (the binary and the root directory are read from the sandbox's own process on the host);
//!    runsc connects to the socket, exchanges the handshake with the executor and hands the
//!    connection to the sandbox's kernel; the socket file is removed at once, so nothing else
//!    can ever connect;
//! 3. a task reads the points as they come ([`record::TraceRecord`]); when the run is over the
//!    rest is drained and the record made.
//!
//! Only gVisor's kernel holds the sending end: nothing inside the sandbox can write to it. The
//! program can only make points (by making syscalls), as many as it likes: the sink never
//! blocks the program for more than about 25 ms a point, then drops and counts, and the record
//! is bounded. Anything that fails here makes the record *unavailable*, with the reason; the run
//! itself goes on as without it.

#[cfg(test)]
mod fixtures;
pub mod points;
pub mod record;
pub mod wire;

use prost::Message as _;
use record::{Clocks, TraceRecord};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::unix::AsyncFd;

/// How long setting a session up may take before the record gives up on it (runsc takes
/// about 60 ms here).
const SETUP_TIMEOUT: Duration = Duration::from_secs(3);
/// The most of runsc's error text kept in a reason.
const MAX_REASON: usize = 300;

/// Why a sandbox has no trace session.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("the sandbox's process is not visible from the executor's /proc")]
    NotVisible,
    #[error("the sandbox's process does not name its runsc root (--root)")]
    NoRoot,
    #[error("setting up the trace socket: {0}")]
    Socket(#[source] std::io::Error),
    #[error("`runsc trace create` failed: {0}")]
    Runsc(String),
    #[error("gVisor's sink did not complete the handshake: {0}")]
    Handshake(String),
    #[error("setting up gVisor's trace session took more than {0:?}")]
    Timeout(Duration),
}

/// A sandbox's trace session, read as it goes.
pub struct Trace {
    connection: Arc<OwnedFd>,
    record: Arc<Mutex<TraceRecord>>,
    reader: tokio::task::AbortHandle,
}

impl Drop for Trace {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Trace {
    /// Sets up a session for the runsc sandbox whose process the host sees as `host_pid`.
    pub async fn open(proc_root: &Path, host_pid: u32, container: &str) -> Result<Trace, TraceError> {
        let (runsc, root) = runsc_of(proc_root, host_pid)?;
        // A directory of its own for each session, only root can enter (0700), removed with
        // what is in it once the sink is connected (or not).
        let dir = tempfile::Builder::new()
            .prefix("airlock-gv-")
            .tempdir()
            .map_err(TraceError::Socket)?;
        let socket = dir.path().join("sink.sock");
        let config = dir.path().join("session.json");
        let result = tokio::time::timeout(SETUP_TIMEOUT, set_up(&runsc, &root, container, &socket, &config)).await;
        drop(dir);
        let connection = result.map_err(|_| TraceError::Timeout(SETUP_TIMEOUT))??;
        let record = Arc::new(Mutex::new(TraceRecord::new(Clocks::now())));
        let connection = Arc::new(connection);
        let reader = tokio::spawn(read(connection.clone(), record.clone())).abort_handle();
        Ok(Trace {
            connection,
            record,
            reader,
        })
    }

    /// The job is handed over now.
    pub fn start_clock(&self) {
        lock(&self.record).start_clock();
    }

    /// The run is over: reads what is left in the socket and makes the record. Everything the
    /// program did is already there: gVisor's kernel writes a point during the syscall itself.
    pub fn finish(self) -> airlock_protocol::Observed {
        self.reader.abort();
        let mut buffer = vec![0u8; wire::MAX_MESSAGE];
        let mut record = lock(&self.record);
        while let Ok(Some((len, cut))) = recv(&self.connection, &mut buffer, libc::MSG_DONTWAIT) {
            record.take(&buffer[..len], cut);
        }
        let record = std::mem::replace(&mut *record, TraceRecord::new(Clocks::now()));
        record.into_record()
    }
}

fn lock(record: &Mutex<TraceRecord>) -> std::sync::MutexGuard<'_, TraceRecord> {
    record.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The runsc binary and its `--root`, from the sandbox's own process on the host (Docker's
/// shim chooses the root directory; it is not in the engine's API).
fn runsc_of(proc_root: &Path, pid: u32) -> Result<(PathBuf, String), TraceError> {
    let process = proc_root.join(pid.to_string());
    let cmdline = std::fs::read(process.join("cmdline")).map_err(|_| TraceError::NotVisible)?;
    let exe = std::fs::read_link(process.join("exe")).map_err(|_| TraceError::NotVisible)?;
    let root = cmdline
        .split(|b| *b == 0)
        .find_map(|arg| arg.strip_prefix(b"--root="))
        .map(|root| String::from_utf8_lossy(root).into_owned())
        .ok_or(TraceError::NoRoot)?;
    Ok((exe, root))
}

/// Listens, runs `runsc trace create`, and completes the handshake runsc starts on the sink's
/// behalf; returns the connection the sandbox's kernel now holds the other end of.
async fn set_up(
    runsc: &Path,
    root: &str,
    container: &str,
    socket: &Path,
    config: &Path,
) -> Result<OwnedFd, TraceError> {
    let listener = listen(socket).map_err(TraceError::Socket)?;
    let endpoint = socket.to_string_lossy();
    let session = points::session_config(&endpoint);
    std::fs::write(config, session.to_string()).map_err(TraceError::Socket)?;
    let create = tokio::process::Command::new(runsc)
        .arg(format!("--root={root}"))
        .args(["trace", "create", "--force", "--config"])
        .arg(config)
        .arg(container)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let (created, connection) = tokio::join!(create, accept(listener));
    let created = created.map_err(|e| TraceError::Runsc(e.to_string()))?;
    if !created.status.success() {
        let text = String::from_utf8_lossy(&created.stderr);
        let text: String = text.trim().chars().take(MAX_REASON).collect();
        return Err(TraceError::Runsc(format!("{}: {text}", created.status)));
    }
    connection
}

/// A nonblocking `SOCK_SEQPACKET` listener at `path`, for one connection. std and tokio have no
/// seqpacket sockets; these few calls are the whole of what is needed.
fn listen(path: &Path) -> std::io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt as _;
    let bytes = path.as_os_str().as_bytes();
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= address.sun_path.len() {
        return Err(std::io::Error::other("the socket path is too long"));
    }
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (to, from) in address.sun_path.iter_mut().zip(bytes) {
        *to = *from as libc::c_char;
    }
    // SAFETY: plain syscalls on a descriptor this function owns; the address is initialised.
    unsafe {
        let fd = libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        if libc::bind(fd.as_raw_fd(), (&raw const address).cast(), len) != 0 || libc::listen(fd.as_raw_fd(), 1) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(fd)
    }
}

/// Watches a descriptor for readiness.
fn register<T: AsRawFd>(fd: T) -> std::io::Result<AsyncFd<T>> {
    // SAFETY: `fd` is an `OwnedFd` (or an `Arc` of one) moved into the `AsyncFd`: it stays open,
    // and the same descriptor, for as long as the `AsyncFd` holds it.
    Ok(unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)? })
}

/// Takes the one connection and answers the handshake (the connecting side speaks first).
async fn accept(listener: OwnedFd) -> Result<OwnedFd, TraceError> {
    let listener = register(listener).map_err(TraceError::Socket)?;
    let connection = loop {
        let mut ready = listener.readable().await.map_err(TraceError::Socket)?;
        // SAFETY: accept4 on a listening socket; a new descriptor is owned at once.
        let fd = unsafe {
            libc::accept4(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if fd >= 0 {
            break unsafe { OwnedFd::from_raw_fd(fd) };
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::WouldBlock {
            return Err(TraceError::Socket(error));
        }
        ready.clear_ready();
    };
    let connection = register(connection).map_err(TraceError::Socket)?;
    let mut buffer = [0u8; 1024];
    let hello = loop {
        let mut ready = connection.readable().await.map_err(TraceError::Socket)?;
        match recv(connection.get_ref(), &mut buffer, 0) {
            Ok(Some((len, false))) => break wire::Handshake::decode(&buffer[..len]),
            Ok(Some((_, true))) => return Err(TraceError::Handshake("too long".into())),
            Ok(None) => ready.clear_ready(),
            Err(error) => return Err(TraceError::Handshake(error.to_string())),
        }
    };
    let hello = hello.map_err(|e| TraceError::Handshake(e.to_string()))?;
    if hello.version < wire::VERSION {
        return Err(TraceError::Handshake(format!("wire version {}", hello.version)));
    }
    let ours = wire::Handshake { version: wire::VERSION }.encode_to_vec();
    // SAFETY: send of an initialised buffer on a connected socket.
    let sent = unsafe {
        libc::send(
            connection.as_raw_fd(),
            ours.as_ptr().cast(),
            ours.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if sent != ours.len() as isize {
        return Err(TraceError::Handshake(std::io::Error::last_os_error().to_string()));
    }
    Ok(connection.into_inner())
}

/// One message: its length and whether it was cut; `None` when none is waiting. A closed
/// connection reads as an error, so that the reader stops.
fn recv(fd: &impl AsRawFd, buffer: &mut [u8], flags: i32) -> std::io::Result<Option<(usize, bool)>> {
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // SAFETY: a msghdr naming one valid buffer, no address and no control data.
    let (got, msg_flags) = unsafe {
        let mut header: libc::msghdr = std::mem::zeroed();
        header.msg_iov = &raw mut iov;
        header.msg_iovlen = 1;
        let got = libc::recvmsg(fd.as_raw_fd(), &raw mut header, flags | libc::MSG_DONTWAIT);
        (got, header.msg_flags)
    };
    if got < 0 {
        let error = std::io::Error::last_os_error();
        return if error.kind() == std::io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(error)
        };
    }
    if got == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Some((got as usize, msg_flags & libc::MSG_TRUNC != 0)))
}

/// Reads points as they come, until the connection closes (the sandbox is gone) or the run's
/// end aborts it.
async fn read(connection: Arc<OwnedFd>, record: Arc<Mutex<TraceRecord>>) {
    let Ok(fd) = register(connection) else { return };
    let mut buffer = vec![0u8; wire::MAX_MESSAGE];
    loop {
        let Ok(mut ready) = fd.readable().await else { return };
        loop {
            match recv(fd.get_ref(), &mut buffer, 0) {
                Ok(Some((len, cut))) => {
                    lock(&record).take(&buffer[..len], cut);
                    // A program flooding the sink must not hold this worker thread.
                    tokio::task::consume_budget().await;
                }
                Ok(None) => {
                    ready.clear_ready();
                    break;
                }
                Err(_) => return,
            }
        }
    }
}
