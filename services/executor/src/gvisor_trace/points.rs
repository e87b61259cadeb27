//! Which of gVisor's trace points a session asks for, and what each one means for the record:
//! the points become the same [`Event`]s the host's eBPF makes for a runc run, so that one
//! [`crate::observation::Recorder`] bounds and files both.
//!
//! gVisor 2022-12-19 has structured points (with paths and addresses) for execve, open, socket,
//! connect, bind and the set*id calls; the rest Airlock records (deletes, renames, mkdir, chmod,
//! chown, sends, ptrace, mount, namespaces, module and BPF loading, io_uring) only as *raw*
//! points: the syscall's number, its first arguments as numbers, and its result, without the
//! strings behind pointers. Those entries therefore carry no path ([`NO_PATH`]). A raw exit
//! point takes its context fields from the matching *enter* point's configuration (a quirk of
//! this release's `task_syscall.go`), so each raw call is asked for at both; the enter points
//! are read and left out of the record.

use super::wire::{Context, Point, Raw};
use airlock_observe::{AT_FDCWD, Action, Event, PrivilegedCall, SocketAddress};
use serde_json::{Value, json};

/// What stands for a path gVisor's raw points do not carry.
pub const NO_PATH: &str = "(path not in gVisor's trace)";
/// PID 1 opens this (it does not exist) once the program's process has become the program's
/// user, before anything of the program runs: non-root points before it are Airlock's own
/// (the identity switch and its check).
pub const START_PATH: &str = "/.airlock-trace-start";
/// PID 1 (root inside gVisor) opens this once the program is over: its point's header carries
/// the sink's count of drops up to the end of the program.
pub const END_PATH: &str = "/.airlock-trace-end";

/// The context fields each point carries: the time, the process and its credentials.
const CONTEXT: [&str; 3] = ["time", "group_id", "credentials"];

/// Structured points, read at the syscall's exit (with its result).
const STRUCTURED: &[&str] = &[
    "execve",
    "execveat",
    "open",
    "openat",
    "creat",
    "socket",
    "connect",
    "bind",
    "setuid",
    "setgid",
    "setresuid",
    "setresgid",
];

/// Raw points: x86-64 syscall numbers.
mod nr {
    pub const SENDTO: u64 = 44;
    pub const SENDMSG: u64 = 46;
    pub const RENAME: u64 = 82;
    pub const MKDIR: u64 = 83;
    pub const RMDIR: u64 = 84;
    pub const UNLINK: u64 = 87;
    pub const CHMOD: u64 = 90;
    pub const FCHMOD: u64 = 91;
    pub const CHOWN: u64 = 92;
    pub const FCHOWN: u64 = 93;
    pub const LCHOWN: u64 = 94;
    pub const PTRACE: u64 = 101;
    pub const SETREUID: u64 = 113;
    pub const SETREGID: u64 = 114;
    pub const CAPSET: u64 = 126;
    pub const MOUNT: u64 = 165;
    pub const UMOUNT2: u64 = 166;
    pub const INIT_MODULE: u64 = 175;
    pub const MKDIRAT: u64 = 258;
    pub const FCHOWNAT: u64 = 260;
    pub const UNLINKAT: u64 = 263;
    pub const RENAMEAT: u64 = 264;
    pub const FCHMODAT: u64 = 268;
    pub const UNSHARE: u64 = 272;
    pub const SENDMMSG: u64 = 307;
    pub const SETNS: u64 = 308;
    pub const FINIT_MODULE: u64 = 313;
    pub const RENAMEAT2: u64 = 316;
    pub const BPF: u64 = 321;
    pub const IO_URING_SETUP: u64 = 425;
    pub const ALL: [u64; 30] = [
        SENDTO,
        SENDMSG,
        RENAME,
        MKDIR,
        RMDIR,
        UNLINK,
        CHMOD,
        FCHMOD,
        CHOWN,
        FCHOWN,
        LCHOWN,
        PTRACE,
        SETREUID,
        SETREGID,
        CAPSET,
        MOUNT,
        UMOUNT2,
        INIT_MODULE,
        MKDIRAT,
        FCHOWNAT,
        UNLINKAT,
        RENAMEAT,
        FCHMODAT,
        UNSHARE,
        SENDMMSG,
        SETNS,
        FINIT_MODULE,
        RENAMEAT2,
        BPF,
        IO_URING_SETUP,
    ];
}

/// The session's configuration (`runsc trace create --config`), sending to `endpoint`. This
/// release allows one session per sandbox, named `Default`. A point the sink cannot send at
/// once (its socket buffer is full) is retried with backoff for up to about 25 ms, which slows
/// only the program that floods it, and then dropped and counted.
pub fn session_config(endpoint: &str) -> Value {
    let mut points = vec![json!({"name": "sentry/clone", "context_fields": CONTEXT})];
    for call in STRUCTURED {
        points.push(json!({"name": format!("syscall/{call}/exit"), "context_fields": CONTEXT}));
    }
    for number in nr::ALL {
        points.push(json!({"name": format!("syscall/sysno/{number}/enter"), "context_fields": CONTEXT}));
        points.push(json!({"name": format!("syscall/sysno/{number}/exit")}));
    }
    json!({
        "name": "Default",
        "points": points,
        "sinks": [{
            "name": "remote",
            "config": {"endpoint": endpoint, "retries": 8, "backoff": "100us", "backoff_max": "10ms"},
        }],
    })
}

/// Whose a point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    /// Root inside gVisor: PID 1, its looks, the program's process before it switched users.
    Airlock,
    /// Airlock's marker that the program starts now (see [`START_PATH`]).
    Start,
    /// PID 1's marker that the program is over (see [`END_PATH`]).
    End,
    /// Anyone else: the program.
    Program,
}

/// Who made a point: by its credentials (the program never holds uid 0: its process gives up
/// root and the way back before any of its code runs), and PID 1's two markers.
pub fn whose(point: &Point) -> Whose {
    let root = point
        .context()
        .and_then(|c| c.credentials.as_ref())
        .is_some_and(|c| c.real_uid == 0 || c.effective_uid == 0);
    let marker = match point {
        Point::Open(open) => Some(open.pathname.as_str()),
        _ => None,
    };
    match (root, marker) {
        (true, Some(END_PATH)) => Whose::End,
        (true, _) => Whose::Airlock,
        (false, Some(START_PATH)) => Whose::Start,
        (false, _) => Whose::Program,
    }
}

/// The most arguments of an exec kept, and the longest, as the eBPF side keeps them; paths are
/// cut at 255 bytes, as there.
const MAX_ARGV: usize = 8;
const MAX_ARG: usize = 127;
const MAX_PATH: usize = 255;

fn cut(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

/// The syscall's result as the eBPF side reports it: the value, or `-errno`.
fn result_of(exit: Option<&super::wire::Exit>) -> i64 {
    match exit {
        Some(exit) if exit.errorno != 0 => -exit.errorno.clamp(1, 4095),
        Some(exit) => exit.result,
        None => 0,
    }
}

/// The event a point stands for, with `monotonic_ns` still to be set; `None` for points that
/// record nothing (raw enter points, clones).
pub fn event_of(point: &Point) -> Option<Event> {
    let (action, result) = match point {
        Point::Clone(_) => return None,
        Point::Raw(raw) => (raw_action(raw)?, result_of(raw.exit.as_ref())),
        Point::Open(open) => (
            Action::Open {
                dir_fd: open.fd,
                path: cut(&open.pathname, MAX_PATH).0,
                flags: u64::from(open.flags),
                mode: u64::from(open.mode),
            },
            result_of(open.exit.as_ref()),
        ),
        Point::Execve(exec) => {
            let mut argv_cut = exec.argv.len() > MAX_ARGV;
            let argv = exec
                .argv
                .iter()
                .take(MAX_ARGV)
                .map(|arg| {
                    let (arg, was_cut) = cut(arg, MAX_ARG);
                    argv_cut |= was_cut;
                    arg
                })
                .collect();
            let action = Action::Exec {
                path: cut(&exec.pathname, MAX_PATH).0,
                argv,
                argv_cut,
            };
            (action, result_of(exec.exit.as_ref()))
        }
        Point::Socket(socket) => (
            Action::Socket {
                family: u16::try_from(socket.domain).unwrap_or(u16::MAX),
                kind: socket.kind as u32,
                protocol: socket.protocol as u32,
            },
            result_of(socket.exit.as_ref()),
        ),
        Point::Connect(connect) => (
            Action::Connect {
                fd: connect.fd,
                address: SocketAddress::parse(&connect.address),
            },
            result_of(connect.exit.as_ref()),
        ),
        Point::Bind(bind) => (
            Action::Bind {
                fd: bind.fd,
                address: SocketAddress::parse(&bind.address),
            },
            result_of(bind.exit.as_ref()),
        ),
        Point::SetId(set) => (
            Action::Privileged {
                call: PrivilegedCall::SetId,
                args: [u64::from(set.id), u64::from(u32::MAX), u64::from(u32::MAX)],
            },
            result_of(set.exit.as_ref()),
        ),
        Point::SetResId(set) => (
            Action::Privileged {
                call: PrivilegedCall::SetId,
                args: [u64::from(set.id), u64::from(set.effective), u64::from(set.saved)],
            },
            result_of(set.exit.as_ref()),
        ),
        Point::Chroot(_) => return None,
    };
    let context = point.context().cloned().unwrap_or_default();
    Some(event(&context, action, result))
}

fn event(context: &Context, action: Action, result: i64) -> Event {
    Event {
        monotonic_ns: 0,
        namespace: 0,
        pid: u32::try_from(context.thread_group_id).unwrap_or(0),
        tid: u32::try_from(context.thread_id).unwrap_or(0),
        ppid: 0,
        comm: String::new(),
        result,
        action,
    }
}

/// A raw exit point's action; `None` for an enter point (no result yet) or another call.
fn raw_action(raw: &Raw) -> Option<Action> {
    raw.exit.as_ref()?;
    let path = || NO_PATH.to_owned();
    let fd = |arg: u64| arg as i64;
    let privileged = |call, args| Action::Privileged { call, args };
    Some(match raw.sysno {
        nr::UNLINK => Action::Unlink {
            dir_fd: AT_FDCWD,
            path: path(),
            flags: 0,
        },
        nr::UNLINKAT => Action::Unlink {
            dir_fd: fd(raw.arg1),
            path: path(),
            flags: raw.arg3,
        },
        nr::RMDIR => Action::Unlink {
            dir_fd: AT_FDCWD,
            path: path(),
            flags: libc::AT_REMOVEDIR as u64,
        },
        nr::RENAME | nr::RENAMEAT | nr::RENAMEAT2 => Action::Rename {
            dir_fd: AT_FDCWD,
            from: path(),
            to: path(),
        },
        nr::MKDIR => Action::Mkdir {
            dir_fd: AT_FDCWD,
            path: path(),
            mode: raw.arg2,
        },
        nr::MKDIRAT => Action::Mkdir {
            dir_fd: fd(raw.arg1),
            path: path(),
            mode: raw.arg3,
        },
        nr::CHMOD => Action::Chmod {
            dir_fd: AT_FDCWD,
            path: path(),
            mode: raw.arg2,
        },
        nr::FCHMOD => Action::Chmod {
            dir_fd: fd(raw.arg1),
            path: String::new(),
            mode: raw.arg2,
        },
        nr::FCHMODAT => Action::Chmod {
            dir_fd: fd(raw.arg1),
            path: path(),
            mode: raw.arg3,
        },
        nr::CHOWN | nr::LCHOWN => Action::Chown {
            dir_fd: AT_FDCWD,
            path: path(),
            uid: raw.arg2 as u32,
            gid: raw.arg3 as u32,
        },
        nr::FCHOWN => Action::Chown {
            dir_fd: fd(raw.arg1),
            path: String::new(),
            uid: raw.arg2 as u32,
            gid: raw.arg3 as u32,
        },
        nr::FCHOWNAT => Action::Chown {
            dir_fd: fd(raw.arg1),
            path: path(),
            uid: raw.arg3 as u32,
            gid: raw.arg4 as u32,
        },
        nr::SENDTO | nr::SENDMSG | nr::SENDMMSG => Action::Send {
            fd: fd(raw.arg1),
            address: None,
            bytes: if raw.sysno == nr::SENDTO { raw.arg3 } else { 0 },
        },
        nr::MOUNT => Action::Mount {
            source: path(),
            target: path(),
            flags: raw.arg4,
        },
        nr::UMOUNT2 => Action::Umount {
            target: path(),
            flags: raw.arg2,
        },
        nr::PTRACE => privileged(PrivilegedCall::Ptrace, [raw.arg1, raw.arg2, 0]),
        nr::SETREUID | nr::SETREGID => privileged(PrivilegedCall::SetId, [raw.arg1, raw.arg2, u64::from(u32::MAX)]),
        nr::CAPSET => privileged(PrivilegedCall::Capset, [raw.arg1, raw.arg2, 0]),
        nr::INIT_MODULE | nr::FINIT_MODULE => privileged(PrivilegedCall::ModuleLoad, [raw.arg1, 0, 0]),
        nr::BPF => privileged(PrivilegedCall::Bpf, [raw.arg1, 0, 0]),
        nr::IO_URING_SETUP => privileged(PrivilegedCall::IoUringSetup, [raw.arg1, 0, 0]),
        nr::UNSHARE => privileged(PrivilegedCall::Namespace, [raw.arg1, 0, 0]),
        nr::SETNS => privileged(PrivilegedCall::Namespace, [raw.arg2, 0, 0]),
        _ => return None,
    })
}
