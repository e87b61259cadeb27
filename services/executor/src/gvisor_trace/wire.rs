//! The messages gVisor's remote trace sink sends, and their decoding.
//!
//! The sink (gVisor release 2022-12-19, `pkg/sentry/seccheck/sinks/remote`) writes one point
//! per `SOCK_SEQPACKET` message: an 8-byte header (header size, message type, the sink's count
//! of points dropped so far, all little-endian on the machines gVisor runs on) and then one
//! protobuf message of that type (`pkg/sentry/seccheck/points/*.proto`). The structs here are
//! our own declarations of the few fields Airlock reads, decoded by prost's derive (unknown
//! fields are skipped, as protobuf requires). The header is not protobuf: it is read by hand in
//! [`Header::parse`], checked against bytes captured from this runsc
//! (`tests/fixtures/gvisor-trace-*.bin`).
//!
//! Everything here comes from inside a sandbox: gVisor's own threat model counts its kernel as
//! possibly compromised, so nothing is trusted beyond its shape, and every length is bounded.

use prost::Message;

/// The wire version Airlock speaks (`wire.CurrentVersion`); the handshake's.
pub const VERSION: u32 = 1;
/// The header as this version writes it.
const HEADER_LEN: usize = 8;
/// The largest message read; a longer one is cut by the socket and counted as unreadable. An
/// execve with a long argv is the largest point Airlock asks for.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// `gvisor.common.Handshake`: each side's wire version, the first message each way.
#[derive(Clone, PartialEq, Message)]
pub struct Handshake {
    #[prost(uint32, tag = "1")]
    pub version: u32,
}

/// The header in front of every point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: u16,
    /// Points the sink failed to send so far (it wraps at `u32::MAX`).
    pub dropped: u32,
}

impl Header {
    /// The header and the payload behind it. A header may grow in later versions (its first
    /// field says how long it is); one shorter than this version's, or longer than the
    /// message, is not a header.
    pub fn parse(message: &[u8]) -> Option<(Header, &[u8])> {
        let size = usize::from(u16::from_le_bytes([*message.first()?, *message.get(1)?]));
        if size < HEADER_LEN || size > message.len() {
            return None;
        }
        let kind = u16::from_le_bytes([message[2], message[3]]);
        let dropped = u32::from_le_bytes([message[4], message[5], message[6], message[7]]);
        Some((Header { kind, dropped }, &message[size..]))
    }
}

/// `gvisor.common.MessageType` values Airlock decodes.
pub mod kind {
    pub const SENTRY_CLONE: u16 = 2;
    pub const SYSCALL_RAW: u16 = 6;
    pub const SYSCALL_OPEN: u16 = 7;
    pub const SYSCALL_CONNECT: u16 = 10;
    pub const SYSCALL_EXECVE: u16 = 11;
    pub const SYSCALL_SOCKET: u16 = 12;
    pub const SYSCALL_SETID: u16 = 14;
    pub const SYSCALL_SETRESID: u16 = 15;
    pub const SYSCALL_CHROOT: u16 = 21;
    pub const SYSCALL_BIND: u16 = 24;
}

#[derive(Clone, PartialEq, Message)]
pub struct Credentials {
    #[prost(uint32, tag = "1")]
    pub real_uid: u32,
    #[prost(uint32, tag = "2")]
    pub effective_uid: u32,
}

/// `gvisor.common.ContextData`: who made the call, as gVisor's kernel knows it.
#[derive(Clone, PartialEq, Message)]
pub struct Context {
    /// CLOCK_REALTIME inside the sandbox.
    #[prost(int64, tag = "1")]
    pub time_ns: i64,
    #[prost(int32, tag = "2")]
    pub thread_id: i32,
    /// The process, numbered in the sandbox's root pid namespace.
    #[prost(int32, tag = "4")]
    pub thread_group_id: i32,
    #[prost(message, optional, tag = "7")]
    pub credentials: Option<Credentials>,
}

/// `gvisor.syscall.Exit`.
#[derive(Clone, PartialEq, Message)]
pub struct Exit {
    #[prost(int64, tag = "1")]
    pub result: i64,
    #[prost(int64, tag = "2")]
    pub errorno: i64,
}

/// `gvisor.syscall.Syscall`: a raw syscall point, its number and arguments as numbers.
#[derive(Clone, PartialEq, Message)]
pub struct Raw {
    #[prost(message, optional, tag = "1")]
    pub context: Option<Context>,
    #[prost(message, optional, tag = "2")]
    pub exit: Option<Exit>,
    #[prost(uint64, tag = "4")]
    pub sysno: u64,
    #[prost(uint64, tag = "5")]
    pub arg1: u64,
    #[prost(uint64, tag = "6")]
    pub arg2: u64,
    #[prost(uint64, tag = "7")]
    pub arg3: u64,
    #[prost(uint64, tag = "8")]
    pub arg4: u64,
}

/// `gvisor.syscall.Open` (open, openat, creat).
#[derive(Clone, PartialEq, Message)]
pub struct Open {
    #[prost(message, optional, tag = "1")]
    pub context: Option<Context>,
    #[prost(message, optional, tag = "2")]
    pub exit: Option<Exit>,
    #[prost(int64, tag = "4")]
    pub fd: i64,
    #[prost(string, tag = "6")]
    pub pathname: String,
    #[prost(uint32, tag = "7")]
    pub flags: u32,
    #[prost(uint32, tag = "8")]
    pub mode: u32,
}

/// `gvisor.syscall.Connect` and `gvisor.syscall.Bind` (the same fields, by number; Bind's fd is
/// an int32, which protobuf reads the same as an int64 here).
#[derive(Clone, PartialEq, Message)]
pub struct Address {
    #[prost(message, optional, tag = "1")]
    pub context: Option<Context>,
    #[prost(message, optional, tag = "2")]
    pub exit: Option<Exit>,
    #[prost(int64, tag = "4")]
    pub fd: i64,
    /// The `sockaddr` as the program passed it.
    #[prost(bytes = "vec", tag = "6")]
    pub address: Vec<u8>,
}

/// `gvisor.syscall.Execve` (execve, execveat).
#[derive(Clone, PartialEq, Message)]
pub struct Execve {
    #[prost(message, optional, tag = "1")]
    pub context: Option<Context>,
    #[prost(message, optional, tag = "2")]
    pub exit: Option<Exit>,
    #[prost(string, tag = "6")]
    pub pathname: String,
    #[prost(string, repeated, tag = "7")]
    pub argv: Vec<String>,
}

/// `gvisor.syscall.Socket`.
#[derive(Clone, PartialEq, Message)]
pub struct Socket {
    #[prost(message, optional, tag = "1")]
    pub context: Option<Context>,
    #[prost(message, optional, tag = "2")]
    pub exit: Option<Exit>,
    #[prost(int32, tag = "4")]
    pub domain: i32,
    #[prost(int32, tag = "5")]
    pub kind: i32,
    #[prost(int32, tag = "6")]
    pub protocol: i32,
}

/// `gvisor.syscall.Setid` (setuid, setgid) and `gvisor.syscall.Setresid` (setresuid,
/// setresgid): `id` is Setid's only id and Setresid's real one.
#[derive(Clone, PartialEq, Message)]
pub struct SetId {
    #[prost(message, optional, tag = "1")]
    pub context: Option<Context>,
    #[prost(message, optional, tag = "2")]
    pub exit: Option<Exit>,
    #[prost(uint64, tag = "3")]
    pub sysno: u64,
    #[prost(uint32, tag = "4")]
    pub id: u32,
    #[prost(uint32, tag = "5")]
    pub effective: u32,
    #[prost(uint32, tag = "6")]
    pub saved: u32,
}

/// `gvisor.syscall.Chroot`.
#[derive(Clone, PartialEq, Message)]
pub struct Chroot {
    #[prost(message, optional, tag = "1")]
    pub context: Option<Context>,
    #[prost(message, optional, tag = "2")]
    pub exit: Option<Exit>,
    #[prost(string, tag = "4")]
    pub pathname: String,
}

/// `gvisor.sentry.CloneInfo`: a new thread or process, and who made it.
#[derive(Clone, PartialEq, Message)]
pub struct Clone {
    #[prost(message, optional, tag = "1")]
    pub context: Option<Context>,
    #[prost(int32, tag = "3")]
    pub created_thread_id: i32,
    #[prost(int32, tag = "4")]
    pub created_thread_group_id: i32,
}

/// One point, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Point {
    Clone(Clone),
    Raw(Raw),
    Open(Open),
    Connect(Address),
    Bind(Address),
    Execve(Execve),
    Socket(Socket),
    SetId(SetId),
    /// setresuid/setresgid, in the same fields.
    SetResId(SetId),
    Chroot(Chroot),
}

impl Point {
    /// Decodes one message (header and payload); `None` when it is not a point of a type
    /// Airlock reads (the count of drops is still in the header).
    pub fn decode(header: Header, payload: &[u8]) -> Result<Option<Point>, prost::DecodeError> {
        Ok(Some(match header.kind {
            kind::SENTRY_CLONE => Point::Clone(Clone::decode(payload)?),
            kind::SYSCALL_RAW => Point::Raw(Raw::decode(payload)?),
            kind::SYSCALL_OPEN => Point::Open(Open::decode(payload)?),
            kind::SYSCALL_CONNECT => Point::Connect(Address::decode(payload)?),
            kind::SYSCALL_BIND => Point::Bind(Address::decode(payload)?),
            kind::SYSCALL_EXECVE => Point::Execve(Execve::decode(payload)?),
            kind::SYSCALL_SOCKET => Point::Socket(Socket::decode(payload)?),
            kind::SYSCALL_SETID => Point::SetId(SetId::decode(payload)?),
            kind::SYSCALL_SETRESID => Point::SetResId(SetId::decode(payload)?),
            kind::SYSCALL_CHROOT => Point::Chroot(Chroot::decode(payload)?),
            _ => return Ok(None),
        }))
    }

    pub fn context(&self) -> Option<&Context> {
        match self {
            Point::Clone(p) => p.context.as_ref(),
            Point::Raw(p) => p.context.as_ref(),
            Point::Open(p) => p.context.as_ref(),
            Point::Connect(p) | Point::Bind(p) => p.context.as_ref(),
            Point::Execve(p) => p.context.as_ref(),
            Point::Socket(p) => p.context.as_ref(),
            Point::SetId(p) | Point::SetResId(p) => p.context.as_ref(),
            Point::Chroot(p) => p.context.as_ref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_read_by_its_own_size_and_a_short_one_is_refused() {
        let message = [8, 0, 7, 0, 3, 0, 0, 0, 0xAA];
        let (header, payload) = Header::parse(&message).unwrap();
        assert_eq!(header, Header { kind: 7, dropped: 3 });
        assert_eq!(payload, [0xAA]);
        // A later, longer header: its extra bytes are skipped.
        let longer = [10, 0, 7, 0, 0, 0, 0, 0, 1, 2, 0xBB];
        assert_eq!(Header::parse(&longer).unwrap().1, [0xBB]);
        for bad in [
            &[][..],
            &[8, 0, 7],
            &[4, 0, 7, 0, 0, 0, 0, 0],
            &[20, 0, 7, 0, 0, 0, 0, 0],
        ] {
            assert_eq!(Header::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_handshake_is_the_version_in_field_one() {
        assert_eq!(Handshake { version: VERSION }.encode_to_vec(), [0x08, 0x01]);
    }
}
