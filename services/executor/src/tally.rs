//! What a run measures, without I/O: its output under the byte cap, where each output stream
//! ends, the peaks and totals of the kernel's readings, and the violations those readings show.

use crate::monitor::Reading;
use airlock_protocol::{Limits, OutputChunk, OutputStream, Violation, ViolationKind};

/// Output under the cap, in order.
pub(crate) struct Output {
    pub(crate) cap: u64,
    /// Bytes the program wrote, kept or not.
    pub(crate) seen: u64,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    seq: u32,
    pub(crate) truncated: bool,
}

impl Output {
    pub(crate) fn new(cap: u64) -> Output {
        Output {
            cap,
            seen: 0,
            stdout: Vec::new(),
            stderr: Vec::new(),
            seq: 0,
            truncated: false,
        }
    }
}

impl Output {
    /// Keeps what fits under the cap; returns the chunk to publish and whether the cap was hit.
    pub(crate) fn push(&mut self, stream: OutputStream, data: &[u8]) -> (Option<OutputChunk>, bool) {
        let kept_so_far = self.stdout.len() as u64 + self.stderr.len() as u64;
        self.seen += data.len() as u64;
        let room = self.cap.saturating_sub(kept_so_far);
        let keep = &data[..data.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        let over = (data.len() as u64) > room;
        if over {
            self.truncated = true;
        }
        if keep.is_empty() {
            return (None, over);
        }
        match stream {
            OutputStream::Stdout => self.stdout.extend_from_slice(keep),
            OutputStream::Stderr => self.stderr.extend_from_slice(keep),
        }
        let chunk = OutputChunk {
            stream,
            seq: self.seq,
            data: keep.to_vec(),
        };
        self.seq += 1;
        (Some(chunk), over)
    }
}

/// Finds the end marker in one output stream, across chunk boundaries, and keeps it out of the
/// program's output. The marker carries a token drawn after the program's last process died,
/// so the first occurrence is PID 1's, written behind everything the program wrote.
pub(crate) struct EndWatch {
    marker: Vec<u8>,
    /// The tail of what was read that could be the start of the marker.
    held: Vec<u8>,
    pub(crate) seen: bool,
}

impl EndWatch {
    pub(crate) fn new(marker: &[u8]) -> Self {
        Self {
            marker: marker.to_vec(),
            held: Vec::new(),
            seen: false,
        }
    }

    /// The program's bytes in `data`: everything before the marker, less a held-back tail that
    /// may be the marker's beginning.
    pub(crate) fn feed(&mut self, data: &[u8]) -> Vec<u8> {
        if self.seen {
            return Vec::new();
        }
        let mut buf = std::mem::take(&mut self.held);
        buf.extend_from_slice(data);
        if let Some(at) = buf.windows(self.marker.len()).position(|w| w == self.marker.as_slice()) {
            self.seen = true;
            buf.truncate(at);
            return buf;
        }
        let keep = (1..self.marker.len().min(buf.len() + 1))
            .rev()
            .find(|&n| buf.ends_with(&self.marker[..n]))
            .unwrap_or(0);
        self.held = buf.split_off(buf.len() - keep);
        buf
    }
}

/// Peaks and totals from the readings.
#[derive(Default)]
pub(crate) struct Tally {
    baseline_cpu_ns: Option<u64>,
    last: Reading,
    pub(crate) peak_memory: u64,
    pub(crate) peak_pids: u32,
    pub(crate) samples: u32,
}

impl Tally {
    pub(crate) fn add(&mut self, reading: Reading) {
        if self.baseline_cpu_ns.is_none() {
            self.baseline_cpu_ns = Some(reading.cpu_ns);
        }
        self.peak_memory = self
            .peak_memory
            .max(reading.peak_memory_bytes)
            .max(reading.memory_bytes);
        self.peak_pids = self.peak_pids.max(reading.peak_pids).max(reading.pids);
        self.last = reading;
    }

    pub(crate) fn cpu_ms(&self) -> u64 {
        self.last.cpu_ns.saturating_sub(self.baseline_cpu_ns.unwrap_or(0)) / 1_000_000
    }
}

/// A violation the readings show, if any.
pub(crate) fn check(limits: &Limits, reading: &Reading) -> Option<Violation> {
    if reading.oom_kills > 0 {
        return Some(Violation {
            kind: ViolationKind::Memory,
            detail: format!(
                "the kernel's OOM killer killed {} process(es) at the {} byte memory limit (no swap)",
                reading.oom_kills, limits.memory_bytes
            ),
            limit: Some(limits.memory_bytes),
            measured: Some(reading.peak_memory_bytes.max(reading.memory_bytes)),
        });
    }
    if reading.fork_failures > 0 {
        return Some(Violation {
            kind: ViolationKind::Pids,
            detail: format!(
                "the pids limit of {} refused {} fork(s)",
                limits.pids, reading.fork_failures
            ),
            limit: Some(u64::from(limits.pids)),
            measured: Some(u64::from(reading.peak_pids.max(reading.pids))),
        });
    }
    if let Some((used, size)) = reading.disk
        && size > 0
        && size.saturating_sub(used) < 4096
    {
        return Some(Violation {
            kind: ViolationKind::Disk,
            detail: format!("the writable space (/tmp, a {size} byte tmpfs) is full"),
            limit: Some(limits.disk_bytes),
            measured: Some(used),
        });
    }
    None
}

/// The violation of an output that passed its cap.
pub(crate) fn output_violation(out: &Output) -> Violation {
    Violation {
        kind: ViolationKind::Output,
        detail: format!(
            "stdout and stderr passed the {} byte output limit; reading stopped and the container was killed",
            out.cap
        ),
        limit: Some(out.cap),
        measured: Some(out.seen),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_capped_across_streams() {
        let mut out = Output::new(10);
        let (chunk, over) = out.push(OutputStream::Stdout, b"123456");
        assert_eq!(chunk.unwrap().data, b"123456");
        assert!(!over);
        let (chunk, over) = out.push(OutputStream::Stderr, b"abcdef");
        let chunk = chunk.unwrap();
        assert_eq!((chunk.data.as_slice(), chunk.seq), (&b"abcd"[..], 1));
        assert!(over && out.truncated);
        let (chunk, over) = out.push(OutputStream::Stdout, b"x");
        assert!(chunk.is_none() && over);
        assert_eq!(out.seen, 13);
    }

    #[test]
    fn the_end_marker_is_found_across_chunks_and_kept_out_of_the_output() {
        let marker = b"\n\0airlock-end-abcdefgh234";
        let mut watch = EndWatch::new(marker);
        let mut got = watch.feed(b"hello\n");
        got.extend(watch.feed(&marker[..5]));
        assert!(!watch.seen);
        got.extend(watch.feed(&marker[5..]));
        assert!(watch.seen);
        assert_eq!(got, b"hello\n");
        assert!(watch.feed(b"after").is_empty());

        // A prefix of the marker that turns out not to be it is output after all.
        let mut watch = EndWatch::new(marker);
        let mut got = watch.feed(&marker[..3]);
        got.extend(watch.feed(b"xyz"));
        assert_eq!(got, [&marker[..3], b"xyz"].concat());
        assert!(!watch.seen);
        // Another token is not the marker.
        let mut watch = EndWatch::new(marker);
        assert_eq!(
            watch.feed(b"\n\0airlock-end-zzzzzzzz234 more"),
            b"\n\0airlock-end-zzzzzzzz234 more"
        );
        assert!(!watch.seen);
    }

    #[test]
    fn readings_become_violations() {
        let limits = crate::SandboxConfig::default().quotas.untrusted;
        assert!(check(&limits, &Reading::default()).is_none());
        let forks = Reading {
            fork_failures: 2,
            pids: 64,
            ..Default::default()
        };
        assert_eq!(check(&limits, &forks).unwrap().kind, ViolationKind::Pids);
        let oom = Reading {
            oom_kills: 1,
            ..Default::default()
        };
        assert_eq!(check(&limits, &oom).unwrap().kind, ViolationKind::Memory);
        let full = Reading {
            disk: Some((16 << 20, 16 << 20)),
            ..Default::default()
        };
        assert_eq!(check(&limits, &full).unwrap().kind, ViolationKind::Disk);
        let half = Reading {
            disk: Some((8 << 20, 16 << 20)),
            ..Default::default()
        };
        assert!(check(&limits, &half).is_none());
    }
}
