//! Airlock's seccomp profile: the system calls a sandboxed program may make, on every sandbox and
//! install container, whatever the runtime (runc applies it in the host's kernel; gVisor, with
//! `--oci-seccomp`, inside its own).
//!
//! It starts from what Docker 20.10's default profile allows a container without capabilities
//! (every container here drops them all) and removes what no sandboxed program needs and kernel
//! exploits start from: io_uring, ptrace, personalities beyond the plain one, socket families
//! other than local, IP and netlink, the x86 LDT, fanotify marks, secret memory, and every 32-bit
//! entry point. Each allowed group and each refusal below carries its reason; `docs/sandbox.md`
//! renders them for operators. [`generate`] turns these tables into the JSON profile Docker
//! reads, one per runtime (they differ in the `clone3` rule only); the profiles are versioned in
//! the repository (`services/executor/seccomp/runc.json` and `runsc.json`) and a test checks
//! each file is exactly what the tables generate (`AIRLOCK_WRITE_SECCOMP=1` rewrites them). The
//! SHA-256 of the one applied ([`digest`]) is recorded in every run's `exec_started` event.

use airlock_protocol::{CodeDigest, Runtime};
use serde::Serialize;

/// The profile's name and version, recorded in the JSON itself; bump it with any change.
pub const VERSION: &str = "airlock-seccomp-1";

/// The profile of each runtime as Docker receives it (`--security-opt seccomp=<this JSON>`), and
/// where it lives relative to the executor crate. They differ in one rule: see `clone3` below.
const PROFILES: [(Runtime, &str, &str); 2] = [
    (Runtime::Runc, include_str!("../seccomp/runc.json"), "seccomp/runc.json"),
    (
        Runtime::Runsc,
        include_str!("../seccomp/runsc.json"),
        "seccomp/runsc.json",
    ),
];

/// EPERM: what a refused call returns (the kernel's own answer to a call a process may not make).
const EPERM: u32 = 1;
/// ENOSYS: what `clone3` returns, so that the C library falls back to `clone`, whose flags the
/// profile can inspect (`clone3` passes them in memory, out of a filter's reach).
const ENOSYS: u32 = 38;

/// The namespace flags of `clone` (`CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
/// CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET`): a `clone` with any of them is refused.
const CLONE_NAMESPACE_FLAGS: u64 = 0x7E02_0000;

/// A group of calls allowed whatever their arguments, and why programs need them.
pub struct Allowed {
    pub reason: &'static str,
    pub names: &'static [&'static str],
}

/// The calls allowed whatever their arguments.
pub const ALLOWED: &[Allowed] = &[
    Allowed {
        reason: "processes and threads: start programs, wait for them, exit; scheduling of its own threads",
        names: &[
            "execve",
            "execveat",
            "exit",
            "exit_group",
            "fork",
            "vfork",
            "wait4",
            "waitid",
            "set_tid_address",
            "set_robust_list",
            "get_robust_list",
            "rseq",
            "restart_syscall",
            "gettid",
            "getpid",
            "getppid",
            "getpgid",
            "getpgrp",
            "getsid",
            "setpgid",
            "setsid",
            "prctl",
            "getpriority",
            "setpriority",
            "sched_getaffinity",
            "sched_setaffinity",
            "sched_getattr",
            "sched_setattr",
            "sched_getparam",
            "sched_setparam",
            "sched_getscheduler",
            "sched_setscheduler",
            "sched_get_priority_max",
            "sched_get_priority_min",
            "sched_rr_get_interval",
            "sched_yield",
            "getcpu",
            "membarrier",
            "ioprio_get",
            "ioprio_set",
            "futex",
            "futex_waitv",
        ],
    },
    Allowed {
        reason: "signals, within the container's own process tree",
        names: &[
            "kill",
            "tgkill",
            "tkill",
            "rt_sigaction",
            "rt_sigpending",
            "rt_sigprocmask",
            "rt_sigqueueinfo",
            "rt_sigreturn",
            "rt_sigsuspend",
            "rt_sigtimedwait",
            "rt_tgsigqueueinfo",
            "sigaltstack",
            "signalfd",
            "signalfd4",
            "pause",
            "alarm",
            "pidfd_open",
            "pidfd_send_signal",
        ],
    },
    Allowed {
        reason: "identity and resource limits: without capabilities a process can only drop what it has",
        names: &[
            "getuid",
            "geteuid",
            "getgid",
            "getegid",
            "getgroups",
            "getresuid",
            "getresgid",
            "setuid",
            "setgid",
            "setreuid",
            "setregid",
            "setresuid",
            "setresgid",
            "setfsuid",
            "setfsgid",
            "setgroups",
            "capget",
            "capset",
            "getrlimit",
            "setrlimit",
            "prlimit64",
            "getrusage",
            "times",
            "umask",
            "uname",
            "sysinfo",
        ],
    },
    Allowed {
        reason: "clocks, timers and sleeping (setting the clock needs CAP_SYS_TIME, which no container has)",
        names: &[
            "clock_gettime",
            "clock_getres",
            "clock_nanosleep",
            "clock_adjtime",
            "adjtimex",
            "gettimeofday",
            "time",
            "nanosleep",
            "getitimer",
            "setitimer",
            "timer_create",
            "timer_delete",
            "timer_getoverrun",
            "timer_gettime",
            "timer_settime",
            "timerfd_create",
            "timerfd_gettime",
            "timerfd_settime",
        ],
    },
    Allowed {
        reason: "memory of its own (bounded by the memory limit and RLIMIT_MEMLOCK)",
        names: &[
            "brk",
            "mmap",
            "munmap",
            "mremap",
            "mprotect",
            "madvise",
            "mincore",
            "mlock",
            "mlock2",
            "mlockall",
            "munlock",
            "munlockall",
            "msync",
            "memfd_create",
        ],
    },
    Allowed {
        reason: "files and directories (the root is read-only; /tmp is the only writable place)",
        names: &[
            "open",
            "openat",
            "openat2",
            "creat",
            "close",
            "close_range",
            "read",
            "write",
            "readv",
            "writev",
            "pread64",
            "pwrite64",
            "preadv",
            "preadv2",
            "pwritev",
            "pwritev2",
            "lseek",
            "dup",
            "dup2",
            "dup3",
            "fcntl",
            "flock",
            "fsync",
            "fdatasync",
            "sync",
            "syncfs",
            "sync_file_range",
            "fallocate",
            "ftruncate",
            "truncate",
            "fadvise64",
            "readahead",
            "copy_file_range",
            "sendfile",
            "splice",
            "tee",
            "vmsplice",
            "stat",
            "fstat",
            "lstat",
            "newfstatat",
            "statx",
            "statfs",
            "fstatfs",
            "access",
            "faccessat",
            "faccessat2",
            "getdents",
            "getdents64",
            "getcwd",
            "chdir",
            "fchdir",
            "mkdir",
            "mkdirat",
            "mknod",
            "mknodat",
            "rmdir",
            "rename",
            "renameat",
            "renameat2",
            "link",
            "linkat",
            "symlink",
            "symlinkat",
            "unlink",
            "unlinkat",
            "readlink",
            "readlinkat",
            "chmod",
            "fchmod",
            "fchmodat",
            "chown",
            "fchown",
            "fchownat",
            "lchown",
            "utime",
            "utimes",
            "utimensat",
            "futimesat",
            "ioctl",
        ],
    },
    Allowed {
        reason: "extended attributes of its own files",
        names: &[
            "getxattr",
            "lgetxattr",
            "fgetxattr",
            "setxattr",
            "lsetxattr",
            "fsetxattr",
            "listxattr",
            "llistxattr",
            "flistxattr",
            "removexattr",
            "lremovexattr",
            "fremovexattr",
        ],
    },
    Allowed {
        reason: "pipes, event descriptors and waiting on many descriptors (select, poll, epoll, inotify)",
        names: &[
            "pipe",
            "pipe2",
            "select",
            "pselect6",
            "poll",
            "ppoll",
            "epoll_create",
            "epoll_create1",
            "epoll_ctl",
            "epoll_ctl_old",
            "epoll_wait",
            "epoll_wait_old",
            "epoll_pwait",
            "epoll_pwait2",
            "eventfd",
            "eventfd2",
            "inotify_init",
            "inotify_init1",
            "inotify_add_watch",
            "inotify_rm_watch",
        ],
    },
    Allowed {
        reason: "Linux asynchronous I/O on its own files (io_uring is refused, see below)",
        names: &[
            "io_setup",
            "io_destroy",
            "io_submit",
            "io_cancel",
            "io_getevents",
            "io_pgetevents",
        ],
    },
    Allowed {
        reason: "sockets, once open (socket() itself is limited to local, IP and netlink families below; a program's container has no network)",
        names: &[
            "socketpair",
            "accept",
            "accept4",
            "bind",
            "connect",
            "listen",
            "getsockname",
            "getpeername",
            "getsockopt",
            "setsockopt",
            "sendto",
            "sendmsg",
            "sendmmsg",
            "recvfrom",
            "recvmsg",
            "recvmmsg",
            "shutdown",
        ],
    },
    Allowed {
        reason: "System V and POSIX IPC, private to the container (multiprocessing's locks and queues)",
        names: &[
            "msgget",
            "msgsnd",
            "msgrcv",
            "msgctl",
            "semget",
            "semop",
            "semtimedop",
            "semctl",
            "shmget",
            "shmat",
            "shmdt",
            "shmctl",
            "mq_open",
            "mq_unlink",
            "mq_timedsend",
            "mq_timedreceive",
            "mq_notify",
            "mq_getsetattr",
        ],
    },
    Allowed {
        reason: "random numbers",
        names: &["getrandom"],
    },
    Allowed {
        reason: "confining itself further: a program may add restrictions to itself, never remove any",
        names: &[
            "seccomp",
            "landlock_create_ruleset",
            "landlock_add_rule",
            "landlock_restrict_self",
        ],
    },
];

/// How a conditional rule compares one argument.
#[derive(Clone, Copy)]
pub enum Compare {
    Equal(u64),
    /// `(arg & mask) == value`.
    Masked {
        mask: u64,
        value: u64,
    },
}

/// What a conditional rule does when it matches.
#[derive(Clone, Copy)]
pub enum Answer {
    Allow,
    Errno(u32),
}

/// A call allowed (or answered with an error) only with certain arguments or on certain machines.
pub struct Conditional {
    pub name: &'static str,
    pub reason: &'static str,
    pub answer: Answer,
    /// `(argument index, comparison)`; empty: any arguments.
    pub args: &'static [(u32, Compare)],
    /// Docker's architecture names (`amd64`, `arm64`); empty: every architecture.
    pub arches: &'static [&'static str],
    /// The one runtime whose profile has this rule; `None`: both.
    pub runtime: Option<Runtime>,
}

/// Calls allowed only with the arguments named, or only on some architectures.
pub const CONDITIONAL: &[Conditional] = &[
    Conditional {
        name: "clone",
        reason: "new processes and threads, without any namespace flag",
        answer: Answer::Allow,
        args: &[(
            0,
            Compare::Masked {
                mask: CLONE_NAMESPACE_FLAGS,
                value: 0,
            },
        )],
        arches: &[],
        runtime: None,
    },
    Conditional {
        name: "clone3",
        reason: "answered ENOSYS, so the C library falls back to clone, whose flags can be checked",
        answer: Answer::Errno(ENOSYS),
        args: &[],
        arches: &[],
        runtime: Some(Runtime::Runc),
    },
    Conditional {
        name: "clone3",
        reason: "under gVisor, passed to gVisor's kernel, which answers ENOSYS itself: its filter answers \
                 every refusal EPERM (it ignores a rule's errno), and EPERM would stop the C library's \
                 fallback to clone, so no thread could start; a gVisor that implements clone3 makes \
                 namespaces in its own kernel, not the host's",
        answer: Answer::Allow,
        args: &[],
        arches: &[],
        runtime: Some(Runtime::Runsc),
    },
    Conditional {
        name: "personality",
        reason: "the plain Linux personality (PER_LINUX)",
        answer: Answer::Allow,
        args: &[(0, Compare::Equal(0))],
        arches: &[],
        runtime: None,
    },
    Conditional {
        name: "personality",
        reason: "asking for the current personality (0xffffffff) changes nothing",
        answer: Answer::Allow,
        args: &[(0, Compare::Equal(0xffff_ffff))],
        arches: &[],
        runtime: None,
    },
    Conditional {
        name: "socket",
        reason: "local sockets (AF_UNIX): socketpair-like plumbing, multiprocessing",
        answer: Answer::Allow,
        args: &[(0, Compare::Equal(1))],
        arches: &[],
        runtime: None,
    },
    Conditional {
        name: "socket",
        reason: "IPv4 sockets (AF_INET): loopback only in a program's container, the egress proxy in an install container",
        answer: Answer::Allow,
        args: &[(0, Compare::Equal(2))],
        arches: &[],
        runtime: None,
    },
    Conditional {
        name: "socket",
        reason: "IPv6 sockets (AF_INET6), as for IPv4",
        answer: Answer::Allow,
        args: &[(0, Compare::Equal(10))],
        arches: &[],
        runtime: None,
    },
    Conditional {
        name: "socket",
        reason: "netlink (AF_NETLINK): the C library's getaddrinfo and getifaddrs read the container's interfaces through it",
        answer: Answer::Allow,
        args: &[(0, Compare::Equal(16))],
        arches: &[],
        runtime: None,
    },
    Conditional {
        name: "arch_prctl",
        reason: "x86-64 thread-local storage setup, done by every program at start",
        answer: Answer::Allow,
        args: &[],
        arches: &["amd64"],
        runtime: None,
    },
    Conditional {
        name: "get_thread_area",
        reason: "x86 thread-local storage descriptors",
        answer: Answer::Allow,
        args: &[],
        arches: &["amd64"],
        runtime: None,
    },
    Conditional {
        name: "set_thread_area",
        reason: "x86 thread-local storage descriptors",
        answer: Answer::Allow,
        args: &[],
        arches: &["amd64"],
        runtime: None,
    },
];

/// A call the profile refuses (EPERM, or ENOSYS for `clone3`), and why. The list names every call
/// Docker's default allows and this profile does not, and the high-risk calls both refuse (so
/// that a test probes each of them); anything not allowed above is refused too.
pub struct Denied {
    pub name: &'static str,
    pub reason: &'static str,
    /// Whether Docker 20.10's default profile allows it to a container without capabilities.
    pub docker_allows: bool,
}

const fn refused(name: &'static str, reason: &'static str) -> Denied {
    Denied {
        name,
        reason,
        docker_allows: false,
    }
}

const fn removed(name: &'static str, reason: &'static str) -> Denied {
    Denied {
        name,
        reason,
        docker_allows: true,
    }
}

const IO_URING: &str = "io_uring: a second system-call interface into the kernel, behind a long run of privilege escalations; refused by newer Docker releases and hardened runtimes";
const KEYRINGS: &str = "kernel keyrings are not namespaced: keys would be shared with the host";
const MODULES: &str = "loading or removing kernel modules";
const NAMESPACES: &str =
    "new namespaces (user namespaces first) open kernel code written for privileged callers to unprivileged ones";
const MOUNTS: &str = "mounting or changing mounts";
const OTHER_PROCESSES: &str = "reading, writing or comparing other processes' memory and descriptors";

/// The refusals, each with its reason.
pub const DENIED: &[Denied] = &[
    removed("io_uring_setup", IO_URING),
    removed("io_uring_enter", IO_URING),
    removed("io_uring_register", IO_URING),
    removed(
        "ptrace",
        "tracing processes: no program here needs a debugger, and ptrace is a classic escalation path",
    ),
    removed(
        "modify_ldt",
        "the x86 local descriptor table: 16-bit code and Wine only, a source of kernel bugs",
    ),
    removed(
        "fanotify_mark",
        "useless without fanotify_init (which needs CAP_SYS_ADMIN): kernel surface for nothing",
    ),
    removed(
        "memfd_secret",
        "secret memory areas: no sandboxed program needs them; recent kernel code",
    ),
    removed(
        "process_mrelease",
        "releasing a killed process's memory early is for out-of-memory daemons",
    ),
    removed(
        "remap_file_pages",
        "deprecated since Linux 3.16 and emulated; nothing current uses it",
    ),
    refused(
        "userfaultfd",
        "user-space page-fault handling: the staple of use-after-free exploits",
    ),
    refused(
        "perf_event_open",
        "performance counters: kernel attack surface and a side channel",
    ),
    refused("bpf", "loading BPF programs into the kernel"),
    refused("keyctl", KEYRINGS),
    refused("add_key", KEYRINGS),
    refused("request_key", KEYRINGS),
    refused("kexec_load", "loading a new kernel"),
    refused("kexec_file_load", "loading a new kernel"),
    refused("init_module", MODULES),
    refused("finit_module", MODULES),
    refused("delete_module", MODULES),
    refused("unshare", NAMESPACES),
    refused("setns", NAMESPACES),
    refused("mount", MOUNTS),
    refused("umount2", MOUNTS),
    refused("pivot_root", MOUNTS),
    refused("chroot", MOUNTS),
    refused("fsopen", MOUNTS),
    refused("fsmount", MOUNTS),
    refused("fspick", MOUNTS),
    refused("move_mount", MOUNTS),
    refused("open_tree", MOUNTS),
    refused("mount_setattr", MOUNTS),
    refused(
        "open_by_handle_at",
        "opening files by handle bypasses the container's root (the 'shocker' escape)",
    ),
    refused("name_to_handle_at", "file handles, the first half of open_by_handle_at"),
    refused("process_vm_readv", OTHER_PROCESSES),
    refused("process_vm_writev", OTHER_PROCESSES),
    refused("process_madvise", OTHER_PROCESSES),
    refused("kcmp", OTHER_PROCESSES),
    refused("pidfd_getfd", OTHER_PROCESSES),
    refused("swapon", "swap devices"),
    refused("swapoff", "swap devices"),
    refused("reboot", "rebooting the host"),
    refused("acct", "process accounting"),
    refused("syslog", "the kernel's log holds addresses that defeat KASLR"),
    refused("iopl", "raw I/O ports"),
    refused("ioperm", "raw I/O ports"),
    refused("settimeofday", "setting the host's clock"),
    refused("clock_settime", "setting the host's clock"),
    refused("quotactl", "disk quotas of the host's filesystems"),
    refused("lookup_dcookie", "kernel profiling internals"),
    refused("vhangup", "hanging up terminals"),
    refused("mbind", "NUMA memory policy of the host"),
    refused("set_mempolicy", "NUMA memory policy of the host"),
    refused("migrate_pages", "moving other processes' pages between NUMA nodes"),
    refused("move_pages", "moving other processes' pages between NUMA nodes"),
    refused(
        "sethostname",
        "the host name (the container has its own, set by the engine)",
    ),
    refused("setdomainname", "the domain name"),
    refused("uselib", "loading a.out libraries: obsolete"),
];

/// Refusals that are not a single call's name: the rest of what the conditional rules leave out.
pub const DENIED_USES: &[(&str, &str)] = &[
    (
        "personality(other than PER_LINUX)",
        "READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE and the other personalities weaken the protections a program runs with",
    ),
    ("clone(with namespace flags)", NAMESPACES),
    (
        "socket(other families)",
        "AF_VSOCK reaches the hypervisor, AF_ALG the kernel's crypto code, AF_PACKET and the rest other kernel subsystems with their own bugs",
    ),
    (
        "32-bit system calls (int 0x80, x32, AArch32)",
        "the compatibility entry points are kernel code of their own, a recurring source of escalations; nothing in the image is 32-bit",
    ),
];

/// The profile's JSON, in the shape Docker 20.10 reads.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Profile {
    comment: String,
    default_action: &'static str,
    default_errno_ret: u32,
    arch_map: Vec<ArchMap>,
    syscalls: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArchMap {
    architecture: &'static str,
    sub_architectures: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    names: Vec<&'static str>,
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    errno_ret: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    args: Vec<Arg>,
    #[serde(skip_serializing_if = "Option::is_none")]
    includes: Option<Includes>,
    comment: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Arg {
    index: u32,
    value: u64,
    value_two: u64,
    op: &'static str,
}

#[derive(Serialize)]
struct Includes {
    arches: Vec<&'static str>,
}

/// The JSON profile the tables above make for `runtime` (what its file must hold).
pub fn generate(runtime: Runtime) -> String {
    let mut syscalls: Vec<Rule> = ALLOWED
        .iter()
        .map(|group| Rule {
            names: group.names.to_vec(),
            action: "SCMP_ACT_ALLOW",
            errno_ret: None,
            args: vec![],
            includes: None,
            comment: group.reason,
        })
        .collect();
    let for_runtime = CONDITIONAL
        .iter()
        .filter(|rule| rule.runtime.is_none_or(|only| only == runtime));
    syscalls.extend(for_runtime.map(|rule| {
        let (action, errno_ret) = match rule.answer {
            Answer::Allow => ("SCMP_ACT_ALLOW", None),
            Answer::Errno(errno) => ("SCMP_ACT_ERRNO", Some(errno)),
        };
        Rule {
            names: vec![rule.name],
            action,
            errno_ret,
            args: rule
                .args
                .iter()
                .map(|&(index, compare)| match compare {
                    Compare::Equal(value) => Arg {
                        index,
                        value,
                        value_two: 0,
                        op: "SCMP_CMP_EQ",
                    },
                    Compare::Masked { mask, value } => Arg {
                        index,
                        value: mask,
                        value_two: value,
                        op: "SCMP_CMP_MASKED_EQ",
                    },
                })
                .collect(),
            includes: (!rule.arches.is_empty()).then(|| Includes {
                arches: rule.arches.to_vec(),
            }),
            comment: rule.reason,
        }
    }));
    let profile = Profile {
        comment: format!(
            "{VERSION} for {}: Airlock's seccomp profile, generated from services/executor/src/seccomp.rs (do not edit)",
            runtime.as_str()
        ),
        default_action: "SCMP_ACT_ERRNO",
        default_errno_ret: EPERM,
        // 64-bit native calls only: no sub-architectures, so 32-bit entry points match nothing.
        arch_map: vec![
            ArchMap {
                architecture: "SCMP_ARCH_X86_64",
                sub_architectures: vec![],
            },
            ArchMap {
                architecture: "SCMP_ARCH_AARCH64",
                sub_architectures: vec![],
            },
        ],
        syscalls,
    };
    // Serialising plain structs of strings and numbers cannot fail.
    let mut text = serde_json::to_string_pretty(&profile).unwrap_or_default();
    text.push('\n');
    text
}

/// The profile applied to containers of `runtime`.
pub fn profile(runtime: Runtime) -> &'static str {
    PROFILES
        .iter()
        .find(|(r, _, _)| *r == runtime)
        .map_or("", |(_, text, _)| text)
}

/// The SHA-256 of the profile of `runtime`: what `exec_started` records.
pub fn digest(runtime: Runtime) -> CodeDigest {
    CodeDigest::of(profile(runtime).as_bytes())
}

/// The `security_opt` entry that applies the profile of `runtime`.
pub fn security_opt(runtime: Runtime) -> String {
    format!("seccomp={}", profile(runtime))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_profile_files_are_what_the_tables_generate() {
        for (runtime, text, path) in PROFILES {
            let generated = generate(runtime);
            if std::env::var_os("AIRLOCK_WRITE_SECCOMP").is_some() {
                let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
                std::fs::write(&path, &generated).expect("write the profile");
                continue;
            }
            assert!(
                text == generated,
                "{path} is not what src/seccomp.rs generates: run \
                 `AIRLOCK_WRITE_SECCOMP=1 cargo test -p airlock-executor --lib seccomp` and review the diff"
            );
        }
    }

    #[test]
    fn no_call_is_both_allowed_and_refused_and_none_is_listed_twice() {
        let mut allowed = BTreeSet::new();
        for name in ALLOWED.iter().flat_map(|g| g.names.iter()) {
            assert!(allowed.insert(*name), "{name} is allowed twice");
        }
        let conditional: BTreeSet<&str> = CONDITIONAL.iter().map(|c| c.name).collect();
        for runtime in [Runtime::Runc, Runtime::Runsc] {
            let clone3: Vec<_> = CONDITIONAL
                .iter()
                .filter(|c| c.name == "clone3" && c.runtime.is_none_or(|r| r == runtime))
                .collect();
            assert_eq!(clone3.len(), 1, "one clone3 rule for {runtime:?}");
        }
        assert!(
            allowed.is_disjoint(&conditional),
            "allowed unconditionally and conditionally: {:?}",
            allowed.intersection(&conditional).collect::<Vec<_>>()
        );
        let mut denied = BTreeSet::new();
        for d in DENIED {
            assert!(denied.insert(d.name), "{} is refused twice", d.name);
            assert!(!d.reason.is_empty());
        }
        let both: Vec<_> = denied.intersection(&allowed).collect();
        assert!(both.is_empty(), "allowed and refused: {both:?}");
        let both: Vec<_> = denied.intersection(&conditional).collect();
        assert!(both.is_empty(), "conditionally allowed and refused: {both:?}");
        for group in ALLOWED {
            assert!(!group.reason.is_empty() && !group.names.is_empty());
        }
    }

    #[test]
    fn the_profiles_refuse_by_default_and_have_no_32_bit_architecture() {
        for runtime in [Runtime::Runc, Runtime::Runsc] {
            check_profile(runtime);
        }
        assert_ne!(digest(Runtime::Runc), digest(Runtime::Runsc));
    }

    fn check_profile(runtime: Runtime) {
        let text = profile(runtime);
        let profile: serde_json::Value = serde_json::from_str(text).expect("the profile is JSON");
        assert_eq!(profile["defaultAction"], "SCMP_ACT_ERRNO");
        assert_eq!(profile["defaultErrnoRet"], 1);
        for arch in profile["archMap"].as_array().expect("archMap") {
            assert_eq!(arch["subArchitectures"], serde_json::json!([]), "{arch}");
        }
        assert!(profile["comment"].as_str().is_some_and(|c| c.starts_with(VERSION)));
        let named: Vec<&str> = profile["syscalls"]
            .as_array()
            .expect("syscalls")
            .iter()
            .flat_map(|rule| rule["names"].as_array().into_iter().flatten())
            .filter_map(|n| n.as_str())
            .collect();
        for refused in [
            "io_uring_setup",
            "ptrace",
            "userfaultfd",
            "keyctl",
            "bpf",
            "unshare",
            "mount",
        ] {
            assert!(!named.contains(&refused), "{refused} appears in the profile");
        }
        assert_eq!(digest(runtime), CodeDigest::of(text.as_bytes()));
    }

    #[test]
    fn every_refusal_is_documented_for_operators() {
        let docs = include_str!("../../../docs/sandbox.md");
        for denied in DENIED {
            assert!(
                docs.contains(&format!("`{}`", denied.name)),
                "docs/sandbox.md does not name the refused call `{}`",
                denied.name
            );
        }
    }
}
