//! From the sink's messages to the run's record: each message is read within bounds, the
//! drops the sink counts are kept, Airlock's own points (root inside gVisor) are left out, and
//! the program's points go to the same bounded [`Recorder`] the host's eBPF feeds.

use super::points::{self, Whose};
use super::wire::{Header, Point};
use crate::observation::Recorder;
use airlock_observe::EventSink as _;
use airlock_protocol::Observed;
use std::collections::HashMap;

/// Who observed, as the record says it.
pub const SOURCE: &str = "gVisor's kernel (its trace points, through its remote sink): the program's processes as gVisor reported them; Airlock's own (root inside gVisor) left out";

/// Processes whose parent is remembered (from clone points), at most.
const MAX_PARENTS: usize = 4096;

/// The realtime clock inside the sandbox against the executor's monotonic one, both read when
/// the session began: the sandbox's clock is the host's, through gVisor.
#[derive(Clone, Copy)]
pub struct Clocks {
    realtime_ns: i64,
    monotonic_ns: u64,
}

impl Clocks {
    pub fn now() -> Clocks {
        let realtime_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        Clocks {
            realtime_ns,
            monotonic_ns: crate::observation::monotonic_ns(),
        }
    }

    fn monotonic(&self, realtime_ns: i64) -> u64 {
        let offset = realtime_ns.saturating_sub(self.realtime_ns);
        self.monotonic_ns.saturating_add_signed(offset)
    }
}

/// Everything read from one session so far.
pub struct TraceRecord {
    clocks: Clocks,
    recorder: Recorder,
    /// The sink's own count of points it could not send, as of the last message.
    dropped: u32,
    /// Messages that were cut by the socket, had no header, or did not decode.
    unreadable: u64,
    /// Points of Airlock's own, left out.
    pub(crate) airlock: u64,
    /// The program's process passed [`points::START_PATH`]: its identity switch is over, and
    /// everything not root from now on is the program's (a later open of that path too).
    started: bool,
    parents: HashMap<u32, u32>,
    /// PID 1's closing point came, with the sink's count of drops up to it.
    ended: bool,
}

impl TraceRecord {
    pub fn new(clocks: Clocks) -> TraceRecord {
        TraceRecord {
            clocks,
            recorder: Recorder::new(),
            dropped: 0,
            unreadable: 0,
            airlock: 0,
            started: false,
            parents: HashMap::new(),
            ended: false,
        }
    }

    /// The job starts now: times in the record count from here.
    pub fn start_clock(&mut self) {
        self.recorder.start_clock_at(crate::observation::monotonic_ns());
    }

    /// One message as the socket gave it; `cut` when it was longer than the buffer.
    pub fn take(&mut self, message: &[u8], cut: bool) {
        let Some((header, payload)) = Header::parse(message).filter(|_| !cut) else {
            self.unreadable += 1;
            return;
        };
        // The count is cumulative; it wraps only after 4 billion drops.
        self.dropped = self.dropped.max(header.dropped);
        let point = match Point::decode(header, payload) {
            Ok(Some(point)) => point,
            Ok(None) => return,
            Err(error) => {
                tracing::debug!(%error, kind = header.kind, "an unreadable point from gVisor's sink");
                self.unreadable += 1;
                return;
            }
        };
        let pid = point
            .context()
            .map_or(0, |c| u32::try_from(c.thread_group_id).unwrap_or(0));
        match points::whose(&point) {
            Whose::Airlock => {
                self.airlock += 1;
                return;
            }
            Whose::End => {
                self.ended = true;
                self.airlock += 1;
                return;
            }
            Whose::Start if !self.started => {
                self.started = true;
                self.airlock += 1;
                return;
            }
            Whose::Start | Whose::Program => {}
        }
        // The program's process switches from root to the program's user before its code
        // runs, and checks root cannot come back: those set*id calls are Airlock's, up to the
        // start marker.
        if matches!(point, Point::SetId(_) | Point::SetResId(_)) && !self.started {
            self.airlock += 1;
            return;
        }
        if let Point::Clone(clone) = &point {
            let child = u32::try_from(clone.created_thread_group_id).unwrap_or(0);
            if clone.created_thread_id == clone.created_thread_group_id && self.parents.len() < MAX_PARENTS {
                self.parents.insert(child, pid);
            }
            return;
        }
        let Some(mut event) = points::event_of(&point) else {
            return;
        };
        event.ppid = self.parents.get(&event.pid).copied().unwrap_or(0);
        event.monotonic_ns = self.clocks.monotonic(point.context().map_or(0, |c| c.time_ns));
        self.recorder.event(event);
    }

    /// The record, with what was lost: points the sink dropped and messages that could not be
    /// read. Without PID 1's closing point, drops after the last message are not known: the
    /// record says so.
    pub fn into_record(self) -> Observed {
        let lost = u64::from(self.dropped) + self.unreadable;
        let mut record = self.recorder.into_record(lost);
        record.source = SOURCE.to_owned();
        if !self.ended {
            record.findings.push(
                "gVisor's trace ended without PID 1's closing point (the run was killed, or the point was dropped): \
                 points gVisor dropped after the last one received are not counted"
                    .to_owned(),
            );
        }
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gvisor_trace::wire::{Context, Credentials, Exit, Open, Raw, SetId, kind};
    use prost::Message;

    fn context(uid: u32, pid: i32) -> Option<Context> {
        Some(Context {
            time_ns: 0,
            thread_id: pid,
            thread_group_id: pid,
            credentials: Some(Credentials {
                real_uid: uid,
                effective_uid: uid,
            }),
        })
    }

    fn message(kind: u16, dropped: u32, payload: &impl Message) -> Vec<u8> {
        let mut bytes = vec![8, 0];
        bytes.extend(kind.to_le_bytes());
        bytes.extend(dropped.to_le_bytes());
        bytes.extend(payload.encode_to_vec());
        bytes
    }

    fn open(uid: u32, pid: i32, path: &str, errno: i64) -> Open {
        Open {
            context: context(uid, pid),
            exit: Some(Exit {
                result: 3,
                errorno: errno,
            }),
            fd: -100,
            pathname: path.into(),
            flags: (libc::O_WRONLY | libc::O_CREAT) as u32,
            mode: 0o644,
        }
    }

    #[test]
    fn airlocks_own_points_are_left_out_and_the_programs_kept() {
        let mut record = TraceRecord::new(Clocks::now());
        record.take(&message(kind::SYSCALL_OPEN, 0, &open(0, 1, "/tmp/out/a", 0)), false);
        // The identity switch and its check, before the start marker: Airlock's.
        let setuid = |id, errno| SetId {
            context: context(1000, 7),
            exit: Some(Exit {
                result: 0,
                errorno: errno,
            }),
            sysno: 105,
            id,
            effective: 0,
            saved: 0,
        };
        record.take(&message(kind::SYSCALL_SETID, 0, &setuid(0, 1)), false);
        record.take(
            &message(kind::SYSCALL_OPEN, 0, &open(1000, 7, points::START_PATH, 2)),
            false,
        );
        record.take(&message(kind::SYSCALL_SETID, 0, &setuid(0, 1)), false);
        record.take(&message(kind::SYSCALL_OPEN, 0, &open(1000, 7, "/tmp/x", 0)), false);
        // A program that names PID 1's closing marker is only the program.
        record.take(
            &message(kind::SYSCALL_OPEN, 0, &open(1000, 7, points::END_PATH, 2)),
            false,
        );
        let observed = record.into_record();
        let paths: Vec<&str> = observed.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["/tmp/x", points::END_PATH], "{observed:#?}");
        assert_eq!(
            observed.privileged.len(),
            1,
            "only the program's own setuid: {observed:#?}"
        );
        assert_eq!(observed.privileged[0].result, "EPERM");
        assert_eq!(observed.findings.len(), 1, "no closing point from PID 1: {observed:#?}");
    }

    #[test]
    fn drops_and_unreadable_messages_are_lost_events() {
        let mut record = TraceRecord::new(Clocks::now());
        let raw_enter = Raw {
            context: context(1000, 7),
            exit: None,
            sysno: 87,
            ..Raw::default()
        };
        record.take(&message(kind::SYSCALL_RAW, 4, &raw_enter), false);
        record.take(&message(kind::SYSCALL_RAW, 2, &raw_enter), false);
        record.take(&[8, 0, 7], false);
        record.take(&message(kind::SYSCALL_OPEN, 0, &open(1000, 7, "/x", 0)), true);
        let mut garbage = message(kind::SYSCALL_OPEN, 0, &open(1000, 7, "/x", 0));
        garbage.truncate(14);
        record.take(&garbage, false);
        record.take(&message(kind::SYSCALL_OPEN, 0, &open(0, 1, points::END_PATH, 2)), false);
        let observed = record.into_record();
        assert_eq!(observed.events_lost, 4 + 3, "{observed:#?}");
        assert!(
            observed.findings.is_empty(),
            "PID 1's closing point came: {observed:#?}"
        );
        assert!(observed.files.is_empty(), "a raw enter point records nothing");
    }
}
