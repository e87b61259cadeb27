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

/// What PID 1 writes on stdout once the whole job is in, before the program exists
/// (`START_MARKER` in `bootstrap.py`).
pub(crate) const START_MARKER: &[u8] = b"\0airlock-start\0";
/// What PID 1 writes at the end of each output stream, before the token (`END_PREFIX` in
/// `bootstrap.py`).
pub(crate) const END_PREFIX: &[u8] = b"\0airlock-end-";
/// What PID 1 writes right behind the start marker in a sealed run, before the seal's token
/// (`SEAL_PREFIX` in `bootstrap.py`).
pub(crate) const SEAL_PREFIX: &[u8] = b"\0airlock-seal-";
/// The token's length and alphabet (`_draw_token` in `bootstrap.py`).
const TOKEN_LEN: usize = 11;
/// The program's exit status behind a sealed run's end marker on stdout: three digits.
const STATUS_LEN: usize = 3;

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)
}

/// Finds the start marker at the head of stdout and keeps it out of the program's output. It is
/// PID 1's acknowledgement that the job reached the container: without it nothing the stream
/// or the engine says is the program's.
///
/// A sealed run's stdout carries the seal right behind it: [`SEAL_PREFIX`] and a token PID 1
/// drew after the program's process was forked and wrote before letting it start. Nothing else
/// can write in between, and the program never holds the token, so a marker of that token later
/// is PID 1's.
#[derive(Default)]
pub(crate) struct StartWatch {
    got: Vec<u8>,
    pub(crate) seen: bool,
    /// Stdout began with something else: the stream is not what PID 1 writes.
    pub(crate) broken: bool,
    sealed: bool,
    /// The seal's token, once read.
    pub(crate) seal: Option<String>,
}

impl StartWatch {
    /// A watch for a sealed run's head: the start marker, then the seal.
    pub(crate) fn sealed() -> StartWatch {
        StartWatch {
            sealed: true,
            ..StartWatch::default()
        }
    }

    fn head_len(&self) -> usize {
        START_MARKER.len() + if self.sealed { SEAL_PREFIX.len() + TOKEN_LEN } else { 0 }
    }

    /// Whether `got` can still become this watch's head.
    fn could_be_head(&self) -> bool {
        let marker = &self.got[..self.got.len().min(START_MARKER.len())];
        if !START_MARKER.starts_with(marker) {
            return false;
        }
        let seal = &self.got[marker.len()..];
        let prefix = &seal[..seal.len().min(SEAL_PREFIX.len())];
        SEAL_PREFIX.starts_with(prefix) && seal[prefix.len()..].iter().all(|b| is_token_byte(*b))
    }

    /// The program's bytes in `data` (stdout).
    pub(crate) fn feed(&mut self, data: &[u8]) -> Vec<u8> {
        if self.seen || self.broken {
            return data.to_vec();
        }
        let wanted = self.head_len() - self.got.len();
        let (head, rest) = data.split_at(data.len().min(wanted));
        self.got.extend_from_slice(head);
        if !self.could_be_head() {
            self.broken = true;
            let mut all = std::mem::take(&mut self.got);
            all.extend_from_slice(rest);
            return all;
        }
        if self.got.len() == self.head_len() {
            self.seen = true;
            if self.sealed {
                let token = &self.got[START_MARKER.len() + SEAL_PREFIX.len()..];
                self.seal = Some(String::from_utf8_lossy(token).into_owned());
            }
        }
        rest.to_vec()
    }
}

/// Finds the end marker in one output stream, across chunk boundaries, and keeps it out of the
/// program's output.
///
/// Once PID 1 showed its token from the host ([`StreamEnd::expect`]), the marker is that exact
/// token: drawn after the program's last process died, so its first occurrence is PID 1's,
/// written behind everything the program wrote. Until then (and always when the executor
/// cannot see the host) a marker of any token counts only as the very last bytes of the stream
/// ([`StreamEnd::finish`]): at the end of the stream nothing of the program is alive to write
/// after PID 1.
#[derive(Default)]
pub(crate) struct StreamEnd {
    /// PID 1's own marker, once known.
    exact: Option<Vec<u8>>,
    /// The tail of what was read that could be the start of a marker.
    held: Vec<u8>,
    pub(crate) seen: bool,
    /// In a sealed run's stdout, the exit status PID 1 writes behind its marker: `Some` once
    /// the marker was seen, with the digits read so far.
    behind: Option<Vec<u8>>,
    wants_status: bool,
}

impl StreamEnd {
    /// From now on, the end is this token's marker.
    pub(crate) fn expect(&mut self, token: &str) {
        self.exact = Some([END_PREFIX, token.as_bytes()].concat());
    }

    /// The end is this seal's marker, followed by the program's exit status (stdout of a
    /// sealed run: PID 1 holds the only copy of the token, and the program is gone when it
    /// writes both).
    pub(crate) fn expect_with_status(&mut self, token: &str) {
        self.expect(token);
        self.wants_status = true;
    }

    /// The exit status behind the marker, once all of it came; `None` before, or when what
    /// came is not a status.
    pub(crate) fn status(&self) -> Option<i64> {
        let digits = self.behind.as_ref()?.get(..STATUS_LEN)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    }

    /// What PID 1 wrote behind the status of a sealed run: the files and the program's own
    /// report ([`crate::sealed_files::Tail`]), once all of it came.
    pub(crate) fn sealed_tail(&self) -> Option<crate::sealed_files::Tail<'_>> {
        if !self.complete() {
            return None;
        }
        crate::sealed_files::split_tail(self.behind.as_deref()?.get(STATUS_LEN..)?)
    }

    /// How many bytes behind the marker make the whole end: the status, then each section of
    /// the tail as long as its length field says (each bounded).
    fn wanted_behind(&self) -> usize {
        let behind = self.behind.as_deref().unwrap_or_default();
        STATUS_LEN + crate::sealed_files::tail_wanted(behind.get(STATUS_LEN..).unwrap_or_default()).0
    }

    /// Whether this stream's end is all in: its marker, and the status and files behind it
    /// where they are wanted.
    pub(crate) fn complete(&self) -> bool {
        self.seen && (!self.wants_status || self.behind.as_ref().is_some_and(|d| d.len() >= self.wanted_behind()))
    }

    fn take_behind(&mut self, mut bytes: &[u8]) {
        // The length field decides how much follows it: take up to it, then the rest.
        while !bytes.is_empty() {
            let room = self
                .wanted_behind()
                .saturating_sub(self.behind.as_ref().map_or(0, Vec::len));
            let Some(behind) = self.behind.as_mut() else { return };
            if room == 0 {
                return;
            }
            let take = bytes.len().min(room);
            behind.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
    }

    /// Whether `bytes` could begin a marker (of PID 1's exact token, or of any token).
    fn could_begin(&self, bytes: &[u8]) -> bool {
        if let Some(exact) = &self.exact {
            return exact.starts_with(bytes);
        }
        if bytes.len() <= END_PREFIX.len() {
            return END_PREFIX.starts_with(bytes);
        }
        bytes.starts_with(END_PREFIX)
            && bytes.len() <= END_PREFIX.len() + TOKEN_LEN
            && bytes[END_PREFIX.len()..].iter().all(|b| is_token_byte(*b))
    }

    /// The program's bytes in `data`: everything before the marker, less a held-back tail that
    /// may be a marker's beginning.
    pub(crate) fn feed(&mut self, data: &[u8]) -> Vec<u8> {
        if self.seen {
            self.take_behind(data);
            return Vec::new();
        }
        let mut buf = std::mem::take(&mut self.held);
        buf.extend_from_slice(data);
        if let Some(exact) = &self.exact
            && let Some(at) = buf.windows(exact.len()).position(|w| w == exact.as_slice())
        {
            self.seen = true;
            if self.wants_status {
                self.behind = Some(Vec::new());
                let after = buf[at + exact.len()..].to_vec();
                self.take_behind(&after);
            }
            buf.truncate(at);
            return buf;
        }
        let longest = END_PREFIX.len() + TOKEN_LEN;
        let keep = (buf.len().saturating_sub(longest)..buf.len())
            .find(|&at| self.could_begin(&buf[at..]))
            .map_or(0, |at| buf.len() - at);
        self.held = buf.split_off(buf.len() - keep);
        buf
    }

    /// The stream ended: whether its last bytes were a marker (then it is seen and dropped);
    /// returns the program's bytes still held back.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let held = std::mem::take(&mut self.held);
        let complete = held.len() == END_PREFIX.len() + TOKEN_LEN && held.starts_with(END_PREFIX);
        let is_marker = match &self.exact {
            Some(exact) => held == *exact,
            None => complete && self.could_begin(&held),
        };
        if is_marker {
            self.seen = true;
            return Vec::new();
        }
        held
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
    pub(crate) fn add(&mut self, mut reading: Reading) {
        // A reading without the engine's sample (under gVisor, the host's counts alone) has no
        // CPU time: it neither starts the count nor takes it back to zero.
        if reading.cpu_ns == 0 {
            reading.cpu_ns = self.last.cpu_ns;
        } else if self.baseline_cpu_ns.is_none() {
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
    // Under gVisor, the host threads of the sandbox past what `pids` processes need: more
    // processes than the limit, seen from the host at once (running ones use host threads).
    if let Some(threads) = reading.sandbox_threads {
        let allowed = crate::docker::runsc_host_threads_for(limits.pids);
        if threads > u64::from(allowed) {
            return Some(Violation {
                kind: ViolationKind::Pids,
                detail: format!(
                    "gVisor used {threads} host threads, past the {allowed} that {} processes need: more processes than the pids limit",
                    limits.pids
                ),
                limit: Some(u64::from(limits.pids)),
                measured: None,
            });
        }
    }
    // gVisor's own count (zombies included): its RLIMIT_NPROC lets a program pass the limit,
    // up to twice it, where the host cannot count (see `docker::ulimits`).
    if let Some(processes) = reading.sandbox_processes
        && processes > limits.pids
    {
        return Some(Violation {
            kind: ViolationKind::Pids,
            detail: format!(
                "gVisor's kernel counted {processes} processes (zombies included), over the pids limit of {}",
                limits.pids
            ),
            limit: Some(u64::from(limits.pids)),
            measured: Some(u64::from(processes)),
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
        let token = "abcdefgh234";
        let marker = [END_PREFIX, token.as_bytes()].concat();
        let mut end = StreamEnd::default();
        end.expect(token);
        let mut got = end.feed(b"hello\n");
        got.extend(end.feed(&marker[..5]));
        assert!(!end.seen);
        got.extend(end.feed(&marker[5..]));
        assert!(end.seen);
        assert_eq!(got, b"hello\n");
        assert!(end.feed(b"after").is_empty());

        // A prefix of the marker that turns out not to be it is output after all.
        let mut end = StreamEnd::default();
        end.expect(token);
        let mut got = end.feed(&marker[..3]);
        got.extend(end.feed(b"xyz"));
        assert_eq!(got, [&marker[..3], b"xyz"].concat());
        assert!(!end.seen);
        // Another token is not PID 1's marker, not even at the end.
        let mut end = StreamEnd::default();
        end.expect(token);
        let forged = [END_PREFIX, b"zzzzzzzz234"].concat();
        let mut got = end.feed(&forged);
        got.extend(end.finish());
        assert_eq!(got, forged);
        assert!(!end.seen);
    }

    #[test]
    fn without_the_token_only_the_last_bytes_of_a_stream_can_end_it() {
        let marker = [END_PREFIX, b"qrstuvwxyz2"].concat();
        // The end of the stream, split anywhere.
        for cut in 0..marker.len() {
            let mut end = StreamEnd::default();
            let mut got = end.feed(&[b"out\n", &marker[..cut]].concat());
            got.extend(end.feed(&marker[cut..]));
            assert!(!end.seen, "seen before the stream ended");
            got.extend(end.finish());
            assert!(end.seen, "cut at {cut}");
            assert_eq!(got, b"out\n");
        }
        // A marker followed by more output is the program's output.
        let mut end = StreamEnd::default();
        let mut got = end.feed(&[&marker[..], b" and more"].concat());
        got.extend(end.finish());
        assert!(!end.seen);
        assert_eq!(got, [&marker[..], b" and more"].concat());
        // A stream cut short inside the marker, or ending in a bad token, did not end.
        for tail in [&marker[..marker.len() - 1], &[END_PREFIX, b"ABCDEFGH234"].concat()[..]] {
            let mut end = StreamEnd::default();
            let mut got = end.feed(tail);
            got.extend(end.finish());
            assert!(!end.seen);
            assert_eq!(got, tail);
        }
        // Ordinary output is held back only where it could begin a marker.
        let mut end = StreamEnd::default();
        assert_eq!(end.feed(b"line\n"), b"line\n");
        assert_eq!(end.feed(b"x\0air"), b"x");
    }

    #[test]
    fn the_start_marker_must_open_stdout() {
        let mut start = StartWatch::default();
        assert!(start.feed(&START_MARKER[..4]).is_empty());
        assert_eq!(start.feed(&[&START_MARKER[4..], b"hi"].concat()), b"hi");
        assert!(start.seen && !start.broken);
        assert_eq!(start.feed(START_MARKER), START_MARKER, "later, it is output");
        let mut start = StartWatch::default();
        assert_eq!(start.feed(b"\0airlock-stop"), b"\0airlock-stop");
        assert!(start.broken && !start.seen);
    }

    #[test]
    fn a_sealed_head_gives_the_token_and_a_sealed_end_the_status() {
        let token = "abcdefgh234";
        let head = [START_MARKER, SEAL_PREFIX, token.as_bytes(), b"hi\n"].concat();
        let mut start = StartWatch::sealed();
        let mut program = Vec::new();
        for chunk in head.chunks(5) {
            program.extend(start.feed(chunk));
        }
        assert_eq!(
            (start.seen, start.broken, start.seal.as_deref()),
            (true, false, Some(token))
        );
        assert_eq!(program, b"hi\n");

        // Program output where the seal should be: not PID 1's stream.
        let mut start = StartWatch::sealed();
        let got = start.feed(&[START_MARKER, b"hello world, not a seal"].concat());
        assert!(start.broken && !start.seen && start.seal.is_none());
        assert!(got.ends_with(b"not a seal"));

        // The end: a marker of another token is the program's output; the seal's, then the
        // status (arriving in pieces), ends it.
        let mut end = StreamEnd::default();
        end.expect_with_status(token);
        let forged = [END_PREFIX, b"zzzzzzzzzzz", b"000"].concat();
        let mut got = end.feed(&forged);
        got.extend(end.feed(b"more\n"));
        got.extend(end.feed(&[END_PREFIX, token.as_bytes(), b"0"].concat()));
        assert!(end.seen && !end.complete() && end.status().is_none());
        got.extend(end.feed(b"42"));
        assert!(
            !end.complete() && end.status() == Some(42),
            "the files section is still to come"
        );
        got.extend(end.feed(b"00000"));
        got.extend(end.feed(b"00003abc"));
        assert!(!end.complete(), "the report's section is still to come");
        got.extend(end.feed(b"0000000002{}trailing"));
        assert!(end.complete());
        assert_eq!(end.status(), Some(42));
        let tail = end.sealed_tail().expect("the tail");
        assert_eq!((tail.files, tail.report), (&b"0000000003abc"[..], &b"{}"[..]));
        assert_eq!(got, [forged.as_slice(), b"more\n"].concat());
        // Without a status wanted (stderr), the marker alone completes it.
        let mut end = StreamEnd::default();
        end.expect(token);
        end.feed(&[END_PREFIX, token.as_bytes()].concat());
        assert!(end.complete());
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
        // gVisor's own count: at the limit is allowed, past it (zombies pile up there) is not.
        let at = Reading {
            sandbox_processes: Some(limits.pids),
            pids: 300,
            ..Default::default()
        };
        assert!(
            check(&limits, &at).is_none(),
            "host threads under gVisor are not processes"
        );
        let past = Reading {
            sandbox_processes: Some(limits.pids + 1),
            ..Default::default()
        };
        let violation = check(&limits, &past).unwrap();
        assert_eq!(
            (violation.kind, violation.measured),
            (ViolationKind::Pids, Some(u64::from(limits.pids) + 1))
        );
        // The sandbox's host threads: up to what `pids` processes need is allowed.
        let allowed = u64::from(crate::docker::runsc_host_threads_for(limits.pids));
        let threads = |n| Reading {
            sandbox_threads: Some(n),
            ..Default::default()
        };
        assert!(check(&limits, &threads(allowed)).is_none());
        assert_eq!(check(&limits, &threads(allowed + 1)).unwrap().kind, ViolationKind::Pids);
    }
}
