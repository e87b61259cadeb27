//! The events the BPF programs report, decoded from the ring buffer's bytes into typed actions.
//! The raw layout is `struct observe_event` in `bpf/observe.h`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Size of `struct observe_event`; a ring buffer record of another size is not ours.
pub(crate) const RAW_EVENT_BYTES: usize = 728;
const COMM: std::ops::Range<usize> = 72..88;
const PATH: std::ops::Range<usize> = 88..344;
const EXTRA: std::ops::Range<usize> = 344..728;

/// `AT_FDCWD`: a path relative to the working directory (the programs store it for the
/// syscalls without a directory argument too).
pub const AT_FDCWD: i64 = -100;

/// One thing a watched process did, as the kernel saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// CLOCK_MONOTONIC at the syscall's entry, in nanoseconds.
    pub monotonic_ns: u64,
    /// The watched pid namespace (inode) the process belongs to.
    pub namespace: u32,
    /// Process (thread group) id, thread id and parent process id, as the host numbers them.
    pub pid: u32,
    pub tid: u32,
    pub ppid: u32,
    /// The process's name (`comm`) when the syscall started.
    pub comm: String,
    /// The syscall's return value (negative: `-errno`); for [`Action::Exit`] the wait status.
    pub result: i64,
    pub action: Action,
}

impl Event {
    /// The error number when the syscall failed.
    pub fn errno(&self) -> Option<i32> {
        match self.action {
            Action::Exit => None,
            _ if (-4095..0).contains(&self.result) => Some(-self.result as i32),
            _ => None,
        }
    }
}

/// What was done. Paths are as the program passed them (relative to `dir_fd` unless absolute),
/// cut at 255 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// execve/execveat: the program and the head of its argv (`argv_cut`: more arguments, or
    /// longer ones, than were read).
    Exec {
        path: String,
        argv: Vec<String>,
        argv_cut: bool,
    },
    /// A process ended (its last thread, or its leader).
    Exit,
    /// open/openat/openat2/creat.
    Open {
        dir_fd: i64,
        path: String,
        flags: u64,
        mode: u64,
    },
    /// unlink/unlinkat/rmdir (`AT_REMOVEDIR` in flags for a directory).
    Unlink {
        dir_fd: i64,
        path: String,
        flags: u64,
    },
    Rename {
        dir_fd: i64,
        from: String,
        to: String,
    },
    Mkdir {
        dir_fd: i64,
        path: String,
        mode: u64,
    },
    /// chmod/fchmodat/fchmod (`path` empty for fchmod: `dir_fd` is the file).
    Chmod {
        dir_fd: i64,
        path: String,
        mode: u64,
    },
    Chown {
        dir_fd: i64,
        path: String,
        uid: u32,
        gid: u32,
    },
    Socket {
        family: u16,
        kind: u32,
        protocol: u32,
    },
    Connect {
        fd: i64,
        address: Option<SocketAddress>,
    },
    Bind {
        fd: i64,
        address: Option<SocketAddress>,
    },
    /// sendto/sendmsg/sendmmsg; `address` is absent on a connected socket.
    Send {
        fd: i64,
        address: Option<SocketAddress>,
        bytes: u64,
    },
    /// mount: source and target.
    Mount {
        source: String,
        target: String,
        flags: u64,
    },
    Umount {
        target: String,
        flags: u64,
    },
    /// Privileged or dangerous syscalls, with their first arguments as numbers.
    Privileged {
        call: PrivilegedCall,
        args: [u64; 3],
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PrivilegedCall {
    Ptrace,
    SetId,
    Capset,
    ModuleLoad,
    Bpf,
    IoUringSetup,
    Namespace,
}

impl PrivilegedCall {
    pub fn name(self) -> &'static str {
        match self {
            PrivilegedCall::Ptrace => "ptrace",
            PrivilegedCall::SetId => "setuid/setgid",
            PrivilegedCall::Capset => "capset",
            PrivilegedCall::ModuleLoad => "module load",
            PrivilegedCall::Bpf => "bpf",
            PrivilegedCall::IoUringSetup => "io_uring_setup",
            PrivilegedCall::Namespace => "unshare/setns",
        }
    }
}

/// A socket address as the program passed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketAddress {
    Ip {
        address: IpAddr,
        port: u16,
    },
    Unix {
        path: String,
    },
    /// Another family (netlink, packet, ...): its number.
    Other {
        family: u16,
    },
}

impl SocketAddress {
    pub fn family(&self) -> &'static str {
        match self {
            SocketAddress::Ip {
                address: IpAddr::V4(_), ..
            } => "inet",
            SocketAddress::Ip {
                address: IpAddr::V6(_), ..
            } => "inet6",
            SocketAddress::Unix { .. } => "unix",
            SocketAddress::Other { .. } => "other",
        }
    }

    /// A `sockaddr` as the program passed it (family in host order, port in network order).
    pub fn parse(bytes: &[u8]) -> Option<SocketAddress> {
        let family = u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]);
        let port = || bytes.get(2..4).map(|p| u16::from_be_bytes([p[0], p[1]]));
        Some(match family as i32 {
            libc::AF_INET => {
                let ip = bytes.get(4..8)?;
                SocketAddress::Ip {
                    address: IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])),
                    port: port()?,
                }
            }
            libc::AF_INET6 => {
                let ip: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
                SocketAddress::Ip {
                    address: IpAddr::V6(Ipv6Addr::from(ip)),
                    port: port()?,
                }
            }
            libc::AF_UNIX => {
                let path = bytes.get(2..).unwrap_or_default();
                // An abstract socket's name starts with a NUL: shown with '@' as ss does.
                let text = match path.split_first() {
                    Some((0, rest)) => format!("@{}", c_string(rest)),
                    _ => c_string(path),
                };
                SocketAddress::Unix { path: text }
            }
            _ => SocketAddress::Other { family },
        })
    }
}

impl std::fmt::Display for SocketAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SocketAddress::Ip {
                address: IpAddr::V6(ip),
                port,
            } => write!(f, "[{ip}]:{port}"),
            SocketAddress::Ip { address, port } => write!(f, "{address}:{port}"),
            SocketAddress::Unix { path } => write!(f, "unix:{path}"),
            SocketAddress::Other { family } => write!(f, "family {family}"),
        }
    }
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn u64_at(raw: &[u8], offset: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&raw[offset..offset + 8]);
    u64::from_ne_bytes(bytes)
}

fn u32_at(raw: &[u8], offset: usize) -> u32 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&raw[offset..offset + 4]);
    u32::from_ne_bytes(bytes)
}

/// The raw ring buffer record decoded, or `None` when it is not a record of ours (wrong size or
/// an unknown kind).
pub(crate) fn decode(raw: &[u8]) -> Option<Event> {
    if raw.len() != RAW_EVENT_BYTES {
        return None;
    }
    let arg = |i: usize| u64_at(raw, 16 + 8 * i);
    let arg3 = u32_at(raw, 40);
    let extra_len = (u32_at(raw, 68) as usize).min(EXTRA.len());
    let path = c_string(&raw[PATH]);
    let extra = &raw[EXTRA];
    let extra_path = || c_string(extra);
    let address = || SocketAddress::parse(&extra[..extra_len]);
    let dir_fd = arg(0) as i64;
    let action = match u32_at(raw, 60) {
        1 => {
            let argv: Vec<String> = extra[..extra_len]
                .split(|b| *b == 0)
                .take((arg3 & 0x7fff_ffff) as usize)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Action::Exec {
                path,
                argv,
                argv_cut: arg3 & (1 << 31) != 0,
            }
        }
        2 => Action::Exit,
        3 => Action::Open {
            dir_fd,
            path,
            flags: arg(1),
            mode: arg(2),
        },
        4 => Action::Unlink {
            dir_fd,
            path,
            flags: arg(1),
        },
        5 => Action::Rename {
            dir_fd,
            from: path,
            to: extra_path(),
        },
        6 => Action::Mkdir {
            dir_fd,
            path,
            mode: arg(2),
        },
        7 => Action::Chmod {
            dir_fd,
            path,
            mode: arg(2),
        },
        8 => Action::Chown {
            dir_fd,
            path,
            uid: arg(1) as u32,
            gid: arg(2) as u32,
        },
        9 => Action::Socket {
            family: arg(0) as u16,
            kind: arg(1) as u32,
            protocol: arg(2) as u32,
        },
        10 => Action::Connect {
            fd: dir_fd,
            address: address(),
        },
        11 => Action::Bind {
            fd: dir_fd,
            address: address(),
        },
        12 => Action::Send {
            fd: dir_fd,
            address: address(),
            bytes: arg(1),
        },
        16 => Action::Mount {
            source: path,
            target: extra_path(),
            flags: arg(1),
        },
        17 => Action::Umount {
            target: extra_path(),
            flags: arg(1),
        },
        kind => {
            let call = match kind {
                13 => PrivilegedCall::Ptrace,
                14 => PrivilegedCall::SetId,
                15 => PrivilegedCall::Capset,
                18 => PrivilegedCall::ModuleLoad,
                19 => PrivilegedCall::Bpf,
                20 => PrivilegedCall::IoUringSetup,
                21 => PrivilegedCall::Namespace,
                _ => return None,
            };
            Action::Privileged {
                call,
                args: [arg(0), arg(1), arg(2)],
            }
        }
    };
    Some(Event {
        monotonic_ns: u64_at(raw, 0),
        result: u64_at(raw, 8) as i64,
        namespace: u32_at(raw, 44),
        pid: u32_at(raw, 48),
        tid: u32_at(raw, 52),
        ppid: u32_at(raw, 56),
        comm: c_string(&raw[COMM]),
        action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(kind: u32, path: &str, extra: &[u8]) -> Vec<u8> {
        let mut raw = vec![0u8; RAW_EVENT_BYTES];
        raw[0..8].copy_from_slice(&7u64.to_ne_bytes());
        raw[8..16].copy_from_slice(&(-13i64).to_ne_bytes());
        raw[48..52].copy_from_slice(&42u32.to_ne_bytes());
        raw[60..64].copy_from_slice(&kind.to_ne_bytes());
        raw[68..72].copy_from_slice(&(extra.len() as u32).to_ne_bytes());
        raw[PATH.start..PATH.start + path.len()].copy_from_slice(path.as_bytes());
        raw[EXTRA.start..EXTRA.start + extra.len()].copy_from_slice(extra);
        raw
    }

    #[test]
    fn an_open_with_its_error() {
        let event = decode(&raw(3, "/etc/shadow", &[])).expect("decodes");
        assert_eq!(event.pid, 42);
        assert_eq!(event.errno(), Some(13));
        assert!(matches!(event.action, Action::Open { ref path, .. } if path == "/etc/shadow"));
    }

    #[test]
    fn socket_addresses_of_each_family() {
        let mut v4 = vec![0u8; 16];
        v4[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&443u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[10, 1, 2, 3]);
        let event = decode(&raw(10, "", &v4)).expect("decodes");
        let Action::Connect {
            address: Some(address), ..
        } = event.action
        else {
            panic!("{event:?}")
        };
        assert_eq!(address.to_string(), "10.1.2.3:443");

        let mut v6 = vec![0u8; 28];
        v6[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[2..4].copy_from_slice(&53u16.to_be_bytes());
        v6[23] = 1;
        let event = decode(&raw(12, "", &v6)).expect("decodes");
        let Action::Send {
            address: Some(address), ..
        } = event.action
        else {
            panic!("{event:?}")
        };
        assert_eq!(address.to_string(), "[::1]:53");

        let mut unix = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        unix.extend_from_slice(b"/run/x.sock\0");
        let event = decode(&raw(10, "", &unix)).expect("decodes");
        let Action::Connect {
            address: Some(address), ..
        } = event.action
        else {
            panic!("{event:?}")
        };
        assert_eq!(address.to_string(), "unix:/run/x.sock");
    }

    #[test]
    fn argv_head_and_cut_mark() {
        let mut bytes = raw(1, "/bin/ls", b"ls\0-la\0");
        bytes[40..44].copy_from_slice(&(2u32 | 1 << 31).to_ne_bytes());
        let event = decode(&bytes).expect("decodes");
        assert_eq!(
            event.action,
            Action::Exec {
                path: "/bin/ls".into(),
                argv: vec!["ls".into(), "-la".into()],
                argv_cut: true
            }
        );
    }

    #[test]
    fn foreign_records_are_refused() {
        assert!(decode(&[0u8; 16]).is_none());
        assert!(decode(&raw(99, "", &[])).is_none());
    }
}
