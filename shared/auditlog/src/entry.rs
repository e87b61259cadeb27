//! What one event becomes in the log: an [`Entry`], MessagePack with named fields, at most
//! 65,535 bytes (the tlog-tiles bundle limit). Large content (code, stdin, output, the raw bytes
//! of a message that could not be read) goes to content-addressed BLAKE3 blobs, stored once and
//! referenced by digest, so that entries stay small and payloads can be pruned without touching
//! the tree.

use crate::hash::Hash;
use crate::tile::MAX_ENTRY_BYTES;
use airlock_protocol::subjects::UNKNOWN_REQUEST;
use airlock_protocol::{Envelope, Event, EventKind, ExecutionRequest, WireError, text};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The entry format version this build writes and reads.
pub const ENTRY_VERSION: u32 = 1;
/// Kind of an entry for a message that could not be decoded.
pub const MALFORMED_KIND: &str = "malformed";
/// Kind of an entry recording stream sequence numbers that were never delivered.
pub const GAP_KIND: &str = "gap";
/// Byte fields up to this size stay in the entry; larger ones (and code, always) go to blobs.
/// One object per small output line would make the store's per-object cost dominate.
pub const INLINE_MAX: usize = 256;
/// The blob slot that holds a whole event too large to stay inline.
pub const EVENT_SLOT: &str = "event";
/// Longest subject and error text kept in a `malformed` entry (the raw bytes are a blob).
pub const MAX_MALFORMED_TEXT: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("entry is not a valid version-{ENTRY_VERSION} entry")]
    Decode(#[source] rmp_serde::decode::Error),
    #[error("entry has format version {0}; this build reads version {ENTRY_VERSION}")]
    Version(u32),
    #[error("encoding the entry")]
    Encode(#[source] rmp_serde::encode::Error),
    #[error("entry is {0} bytes even with its event in a blob")]
    TooLarge(usize),
}

/// A reference to a blob: its BLAKE3 digest (hex) and length.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobRef {
    pub b3: String,
    pub len: u64,
}

impl BlobRef {
    /// The object path of the blob, beside the tiles.
    pub fn path(&self) -> String {
        blob_path(&self.b3)
    }
}

/// `blob/<first two hex digits>/<the rest>`: spread over 256 directories, so a local store
/// does not serialise every write on one directory's lock.
pub fn blob_path(digest_hex: &str) -> String {
    match (digest_hex.get(..2), digest_hex.get(2..)) {
        (Some(head), Some(rest)) if !rest.is_empty() => format!("blob/{head}/{rest}"),
        _ => format!("blob/{digest_hex}"),
    }
}

/// Content to be stored as a blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blob {
    pub reference: BlobRef,
    pub bytes: Vec<u8>,
}

impl Blob {
    pub fn of(bytes: Vec<u8>) -> Blob {
        Blob {
            reference: BlobRef {
                b3: blake3::hash(&bytes).to_hex().to_string(),
                len: bytes.len() as u64,
            },
            bytes,
        }
    }
}

/// A message on the events stream that could not be read as an envelope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Malformed {
    pub subject: String,
    /// `malformed`, `unknown_schema_version`, `subject_mismatch`, `oversized` or `bad_id`.
    pub error_kind: String,
    pub error: String,
}

/// Content the log records by digest and size only, and why: a refused submission's code, a
/// client over its byte budget, the raw bytes of a large unreadable message. The log still proves
/// what was sent (the digest is in the entry, under the tree), without letting a hostile client
/// fill the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Withheld {
    pub b3: String,
    pub len: u64,
    pub reason: String,
}

/// Stream sequence numbers the auditor never received (expired from the stream, or deleted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    pub first_stream_seq: u64,
    pub last_stream_seq: u64,
    pub reason: String,
}

/// One log entry. Field order is the encoding order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Format version ([`ENTRY_VERSION`]).
    pub v: u32,
    /// Position in the log: the leaf index, from 0, with no gaps.
    pub seq: u64,
    /// When the auditor appended it (Unix milliseconds).
    pub time_ms: i64,
    /// The event kind (`submitted`, `terminal`, ...), or `malformed` or `gap`.
    pub kind: String,
    pub request_id: String,
    #[serde(default)]
    pub producer: Option<String>,
    #[serde(default)]
    pub message_id: Option<String>,
    /// When the producer created the event.
    #[serde(default)]
    pub event_time_ms: Option<i64>,
    /// Sequence number of the message in the events stream.
    #[serde(default)]
    pub stream_seq: Option<u64>,
    /// W3C trace context the message carried.
    #[serde(default)]
    pub traceparent: Option<String>,
    /// The event, with its large byte fields emptied and moved to `blobs`.
    #[serde(default)]
    pub event: Option<Event>,
    #[serde(default)]
    pub malformed: Option<Malformed>,
    #[serde(default)]
    pub gap: Option<Gap>,
    /// Blob slot name (`code`, `stdin`, `data`, `stdout`, `stderr`, `raw`, `event`) → blob.
    pub blobs: BTreeMap<String, BlobRef>,
    /// Slots whose content was not stored, only its digest and size (see [`Withheld`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub withheld: BTreeMap<String, Withheld>,
    /// Leaf hash of the previous entry (`SHA-256(0x00 || previous entry)`), zero for entry 0:
    /// the hash chain, tied to the Merkle tree's own leaves so that it stays checkable after
    /// entry bundles are pruned.
    pub prev: Hash,
}

/// An entry before the writer gives it its place (`seq`, `time_ms`, `prev`), with the blobs
/// it references.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub entry: Entry,
    pub blobs: Vec<Blob>,
}

/// The blob slot of a file given to the program.
pub fn input_slot(name: &str) -> String {
    format!("file/{name}")
}

/// The blob slot of a file the program returned under `out/`.
pub fn output_slot(name: &str) -> String {
    format!("out/{name}")
}

fn skeleton(kind: &str, request_id: &str) -> Entry {
    Entry {
        v: ENTRY_VERSION,
        seq: 0,
        time_ms: 0,
        kind: kind.to_owned(),
        request_id: request_id.to_owned(),
        producer: None,
        message_id: None,
        event_time_ms: None,
        stream_seq: None,
        traceparent: None,
        event: None,
        malformed: None,
        gap: None,
        blobs: BTreeMap::new(),
        withheld: BTreeMap::new(),
        prev: Hash::ZERO,
    }
}

struct Extractor<'a> {
    entry: &'a mut Entry,
    blobs: &'a mut Vec<Blob>,
}

impl Extractor<'_> {
    /// Moves `bytes` to a blob: always for `always` slots (code, for diffs and because it
    /// recurs in several events), otherwise only when it is larger than [`INLINE_MAX`].
    fn take(&mut self, slot: &str, bytes: &mut Vec<u8>, always: bool) {
        if !always && bytes.len() <= INLINE_MAX {
            return;
        }
        let blob = Blob::of(std::mem::take(bytes));
        self.entry.blobs.insert(slot.to_owned(), blob.reference.clone());
        if !self.blobs.iter().any(|b| b.reference == blob.reference) {
            self.blobs.push(blob);
        }
    }

    /// Files always go to blobs (slot `file/<name>` in, `out/<name>` out): stored once by
    /// content however many events carry them, and fetched one by one.
    fn request(&mut self, request: &mut ExecutionRequest) {
        self.take("code", &mut request.code, true);
        self.take("stdin", &mut request.inputs.stdin, false);
        for file in &mut request.inputs.files {
            self.take(&input_slot(&file.name), &mut file.content, true);
        }
    }

    fn terminal(&mut self, terminal: &mut airlock_protocol::Terminal) {
        self.take("stdout", &mut terminal.stdout, false);
        self.take("stderr", &mut terminal.stderr, false);
        for file in &mut terminal.files {
            self.take(&output_slot(&file.name), &mut file.content, true);
        }
    }
}

impl Prepared {
    /// The entry for a decoded event.
    pub fn from_envelope(envelope: Envelope, stream_seq: Option<u64>, traceparent: Option<String>) -> Prepared {
        let mut entry = skeleton(envelope.kind().as_str(), envelope.request_id.as_str());
        entry.producer = Some(envelope.producer.as_str().to_owned());
        entry.message_id = Some(envelope.id.as_str().to_owned());
        entry.event_time_ms = Some(envelope.time_ms);
        entry.stream_seq = stream_seq;
        entry.traceparent = traceparent;
        let mut event = envelope.event;
        let mut blobs = Vec::new();
        let mut x = Extractor {
            entry: &mut entry,
            blobs: &mut blobs,
        };
        match &mut event {
            Event::Submitted(request) => x.request(request),
            Event::Assessed(assessed) => x.request(&mut assessed.request),
            Event::Decided(decided) => {
                if let Some(request) = decided.request.as_mut() {
                    x.request(request);
                }
            }
            // The same code as the request's: one blob, stored once.
            Event::OverrideAsked(asked) => x.take("code", &mut asked.code, true),
            Event::Output(chunk) => x.take("data", &mut chunk.data, false),
            Event::Terminal(terminal) => x.terminal(terminal),
            _ => {}
        }
        entry.event = Some(event);
        Prepared { entry, blobs }
    }

    /// The entry for a message that could not be read: the subject, the typed error, and the
    /// raw bytes as a blob.
    pub fn malformed(subject: &str, error: &WireError, raw: &[u8], stream_seq: Option<u64>) -> Prepared {
        let request_id = EventKind::parse_subject(subject)
            .map(|(_, rid)| rid)
            .filter(|rid| airlock_protocol::RequestId::parse(rid).is_ok())
            .unwrap_or(UNKNOWN_REQUEST);
        let mut entry = skeleton(MALFORMED_KIND, request_id);
        entry.stream_seq = stream_seq;
        let error_kind = match error {
            WireError::Oversized { .. } => "oversized",
            WireError::UnknownSchemaVersion { .. } => "unknown_schema_version",
            WireError::Malformed(_) | WireError::Encode(_) => "malformed",
            WireError::SubjectMismatch { .. } => "subject_mismatch",
            WireError::ProducerMismatch { .. } => "producer_mismatch",
            WireError::BadId(_) => "bad_id",
        };
        // Both come from whoever sent the message: bounded, and cut by character.
        entry.malformed = Some(Malformed {
            subject: text::clip(subject, MAX_MALFORMED_TEXT),
            error_kind: error_kind.to_owned(),
            error: text::clip(&airlock_protocol::error_chain(error), MAX_MALFORMED_TEXT),
        });
        let blob = Blob::of(raw.to_vec());
        entry.blobs.insert("raw".to_owned(), blob.reference.clone());
        Prepared {
            entry,
            blobs: vec![blob],
        }
    }

    /// The entry recording that stream messages `first..=last` will never be delivered.
    pub fn gap(first_stream_seq: u64, last_stream_seq: u64, reason: &str) -> Prepared {
        let mut entry = skeleton(GAP_KIND, UNKNOWN_REQUEST);
        entry.gap = Some(Gap {
            first_stream_seq,
            last_stream_seq,
            reason: reason.to_owned(),
        });
        Prepared { entry, blobs: vec![] }
    }

    /// Bytes the entry's blobs would add to the store.
    pub fn blob_bytes(&self) -> u64 {
        self.blobs.iter().map(|b| b.reference.len).sum()
    }

    /// Keeps only the digest and size of every blob, with `reason`: nothing of the content is
    /// stored.
    pub fn withhold(&mut self, reason: &str) {
        let slots = std::mem::take(&mut self.entry.blobs);
        for (slot, reference) in slots {
            self.entry.withheld.insert(
                slot,
                Withheld {
                    b3: reference.b3,
                    len: reference.len,
                    reason: text::clip(reason, MAX_MALFORMED_TEXT),
                },
            );
        }
        self.blobs.clear();
    }

    /// Gives the entry its place and encodes it; an event too large to stay inline moves to a
    /// blob of its own.
    pub fn place(mut self, seq: u64, time_ms: i64, prev: Hash) -> Result<(Entry, Vec<u8>, Vec<Blob>), EntryError> {
        self.entry.seq = seq;
        self.entry.time_ms = time_ms;
        self.entry.prev = prev;
        let mut bytes = self.entry.encode()?;
        if bytes.len() > MAX_ENTRY_BYTES {
            if let Some(event) = self.entry.event.take() {
                let body = rmp_serde::to_vec_named(&event).map_err(EntryError::Encode)?;
                let blob = Blob::of(body);
                self.entry.blobs.insert(EVENT_SLOT.to_owned(), blob.reference.clone());
                self.blobs.push(blob);
            }
            if let Some(m) = self.entry.malformed.as_mut() {
                text::truncate(&mut m.error, MAX_MALFORMED_TEXT);
                text::truncate(&mut m.subject, MAX_MALFORMED_TEXT);
            }
            bytes = self.entry.encode()?;
            if bytes.len() > MAX_ENTRY_BYTES {
                return Err(EntryError::TooLarge(bytes.len()));
            }
        }
        Ok((self.entry, bytes, self.blobs))
    }
}

impl Entry {
    pub fn encode(&self) -> Result<Vec<u8>, EntryError> {
        rmp_serde::to_vec_named(self).map_err(EntryError::Encode)
    }

    pub fn decode(bytes: &[u8]) -> Result<Entry, EntryError> {
        #[derive(Deserialize)]
        struct Version {
            v: u32,
        }
        let version: Version = rmp_serde::from_slice(bytes).map_err(EntryError::Decode)?;
        if version.v != ENTRY_VERSION {
            return Err(EntryError::Version(version.v));
        }
        rmp_serde::from_slice(bytes).map_err(EntryError::Decode)
    }

    pub fn is_terminal(&self) -> bool {
        self.kind == EventKind::Terminal.as_str()
    }

    /// The full event, with the blobs put back; `fetch` gives a blob's bytes by digest. Slots
    /// whose blob is gone (pruned) stay empty.
    pub fn restore(&self, mut fetch: impl FnMut(&BlobRef) -> Option<Vec<u8>>) -> Option<Event> {
        let mut event = match (&self.event, self.blobs.get(EVENT_SLOT)) {
            (Some(event), _) => event.clone(),
            (None, Some(blob)) => rmp_serde::from_slice(&fetch(blob)?).ok()?,
            (None, None) => return None,
        };
        let mut fill = |slot: &str, target: &mut Vec<u8>| {
            if let Some(bytes) = self.blobs.get(slot).and_then(&mut fetch) {
                *target = bytes;
            }
        };
        let request = |r: &mut ExecutionRequest, fill: &mut dyn FnMut(&str, &mut Vec<u8>)| {
            fill("code", &mut r.code);
            fill("stdin", &mut r.inputs.stdin);
            for file in &mut r.inputs.files {
                fill(&input_slot(&file.name), &mut file.content);
            }
        };
        match &mut event {
            Event::Submitted(r) => request(r, &mut fill),
            Event::Assessed(a) => request(&mut a.request, &mut fill),
            Event::Decided(d) => {
                if let Some(r) = d.request.as_mut() {
                    request(r, &mut fill)
                }
            }
            Event::OverrideAsked(asked) => fill("code", &mut asked.code),
            Event::Output(c) => fill("data", &mut c.data),
            Event::Terminal(t) => {
                fill("stdout", &mut t.stdout);
                fill("stderr", &mut t.stderr);
                for file in &mut t.files {
                    fill(&output_slot(&file.name), &mut file.content);
                }
            }
            _ => {}
        }
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::{Language, Producer, RequestId};

    fn submitted(code: &[u8]) -> Envelope {
        Envelope::new(
            RequestId::parse("req-1").unwrap(),
            Producer::Mai,
            Event::Submitted(ExecutionRequest::new(Language::Python, code.to_vec())),
        )
    }

    #[test]
    fn code_goes_to_a_blob_and_comes_back() {
        let envelope = submitted(b"print('hi')");
        let prepared = Prepared::from_envelope(envelope.clone(), Some(7), None);
        assert_eq!(prepared.blobs.len(), 1);
        let (entry, bytes, blobs) = prepared.place(3, 1000, Hash([9; 32])).unwrap();
        assert_eq!(Entry::decode(&bytes).unwrap(), entry);
        assert_eq!(
            entry.blobs["code"].b3,
            blake3::hash(b"print('hi')").to_hex().to_string()
        );
        let restored = entry.restore(|r| blobs.iter().find(|b| &b.reference == r).map(|b| b.bytes.clone()));
        assert_eq!(restored, Some(envelope.event));
    }

    #[test]
    fn an_override_requests_whole_code_is_the_requests_blob_and_comes_back() {
        let code = b"import os\nos.system('id')\n".to_vec();
        let asked = airlock_protocol::OverrideAsked {
            code_digest: airlock_protocol::CodeDigest::of(&code),
            code_preview: "import os\n".into(),
            code: code.clone(),
            ..airlock_protocol::OverrideAsked::display_only()
        };
        let envelope = Envelope::new(
            RequestId::parse("mai.r1").unwrap(),
            Producer::OverrideGate,
            Event::OverrideAsked(asked),
        );
        let prepared = Prepared::from_envelope(envelope.clone(), Some(2), None);
        assert_eq!(prepared.blobs.len(), 1);
        let (entry, _, blobs) = prepared.place(0, 1, Hash::ZERO).unwrap();
        assert_eq!(entry.blobs["code"].b3, blake3::hash(&code).to_hex().to_string());
        let Some(Event::OverrideAsked(kept)) = &entry.event else {
            panic!("{entry:?}")
        };
        assert!(kept.code.is_empty(), "the code is in the blob, not inline");
        let fetch = |r: &BlobRef| blobs.iter().find(|b| &b.reference == r).map(|b| b.bytes.clone());
        assert_eq!(entry.restore(fetch), Some(envelope.event));
    }

    #[test]
    fn files_in_and_out_are_blobs_by_name_and_come_back() {
        let mut request = ExecutionRequest::new(Language::Python, b"print(1)".to_vec());
        request.inputs.files = vec![
            airlock_protocol::InputFile::new("data.csv", "a,b\n"),
            airlock_protocol::InputFile::new("same.csv", "a,b\n"),
        ];
        let rid = RequestId::parse("mai.r1").unwrap();
        let submitted = Envelope::new(rid.clone(), Producer::Mai, Event::Submitted(request));
        let prepared = Prepared::from_envelope(submitted.clone(), Some(1), None);
        assert_eq!(
            prepared.blobs.len(),
            2,
            "the code, and the two files' one content stored once"
        );
        assert!(
            prepared.entry.blobs.contains_key("file/data.csv") && prepared.entry.blobs.contains_key("file/same.csv")
        );
        let (entry, _, blobs) = prepared.place(0, 1, Hash::ZERO).unwrap();
        let fetch = |r: &BlobRef| blobs.iter().find(|b| &b.reference == r).map(|b| b.bytes.clone());
        assert_eq!(entry.restore(fetch), Some(submitted.event));

        let mut terminal = airlock_protocol::Terminal::without_run(airlock_protocol::Outcome::Finished, "");
        terminal.files = vec![airlock_protocol::OutputFile {
            name: "chart.png".into(),
            size: 4,
            sha256: airlock_protocol::CodeDigest::of(b"\x89PNG"),
            media_type: "image/png".into(),
            content: b"\x89PNG".to_vec(),
            omitted: None,
        }];
        let ended = Envelope::new(rid, Producer::Executor, Event::Terminal(Box::new(terminal)));
        let prepared = Prepared::from_envelope(ended.clone(), Some(2), None);
        assert_eq!(prepared.entry.blobs["out/chart.png"].len, 4);
        let (entry, _, blobs) = prepared.place(1, 2, Hash::ZERO).unwrap();
        let Some(Event::Terminal(inline)) = &entry.event else {
            panic!("{entry:?}")
        };
        assert!(
            inline.files[0].content.is_empty(),
            "the entry names the content by digest only"
        );
        let fetch = |r: &BlobRef| blobs.iter().find(|b| &b.reference == r).map(|b| b.bytes.clone());
        assert_eq!(entry.restore(fetch), Some(ended.event));
    }

    #[test]
    fn huge_events_move_to_a_blob() {
        let mut envelope = submitted(b"x");
        if let Event::Submitted(r) = &mut envelope.event {
            r.label = Some("y".repeat(100_000));
        }
        let (entry, bytes, blobs) = Prepared::from_envelope(envelope.clone(), None, None)
            .place(0, 0, Hash::ZERO)
            .unwrap();
        assert!(bytes.len() < 1000);
        assert!(entry.event.is_none() && entry.blobs.contains_key(EVENT_SLOT));
        let restored = entry.restore(|r| blobs.iter().find(|b| &b.reference == r).map(|b| b.bytes.clone()));
        assert_eq!(restored, Some(envelope.event));
    }

    fn decode_error(bytes: &[u8]) -> WireError {
        match Envelope::decode(bytes) {
            Err(e) => e,
            Ok(_) => panic!("expected a decode error"),
        }
    }

    #[test]
    fn malformed_messages_keep_their_bytes_and_error() {
        let error = decode_error(b"\xc1junk");
        let p = Prepared::malformed("airlock.submit.mai.req-9", &error, b"\xc1junk", Some(4));
        assert_eq!(p.entry.request_id, "mai.req-9");
        assert_eq!(p.entry.malformed.as_ref().unwrap().error_kind, "malformed");
        assert_eq!(p.blobs[0].bytes, b"\xc1junk");
        let p = Prepared::malformed("weird", &error, b"", None);
        assert_eq!(p.entry.request_id, UNKNOWN_REQUEST);
    }

    /// A producer field of long multi-byte text once crash-looped the auditor: the decode
    /// error quotes it, and cutting that error inside a character panicked.
    #[test]
    fn long_multibyte_text_in_a_bad_message_never_panics() {
        #[derive(serde::Serialize)]
        struct Hostile {
            schema: u32,
            id: String,
            request_id: String,
            producer: String,
            time_ms: i64,
        }
        for unit in ["é", "€", "😀", "a\u{301}"] {
            let hostile = Hostile {
                schema: airlock_protocol::SCHEMA_VERSION,
                id: "m".into(),
                request_id: "r".into(),
                producer: unit.repeat(300_000),
                time_ms: 0,
            };
            let bytes = rmp_serde::to_vec_named(&hostile).unwrap();
            let error = decode_error(&bytes);
            let subject = format!("airlock.submit.mai.{}", unit.repeat(2000));
            let (entry, encoded, _) = Prepared::malformed(&subject, &error, &bytes, Some(1))
                .place(0, 0, Hash::ZERO)
                .unwrap();
            let m = entry.malformed.unwrap();
            assert!(m.error.len() <= MAX_MALFORMED_TEXT && m.subject.len() <= MAX_MALFORMED_TEXT);
            assert!(encoded.len() <= MAX_ENTRY_BYTES);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_subject_and_bytes_make_a_bounded_entry(subject in ".{0,3000}", bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2048)) {
            let error = match Envelope::decode_on(&subject, &bytes) {
                Err(e) => e,
                Ok(_) => return Ok(()),
            };
            let (entry, encoded, _) = Prepared::malformed(&subject, &error, &bytes, None).place(0, 0, Hash::ZERO).unwrap();
            let m = entry.malformed.unwrap();
            proptest::prop_assert!(m.subject.len() <= MAX_MALFORMED_TEXT);
            proptest::prop_assert!(encoded.len() <= MAX_ENTRY_BYTES);
        }
    }

    #[test]
    fn other_versions_are_refused() {
        let (mut entry, _, _) = Prepared::gap(1, 2, "expired").place(0, 0, Hash::ZERO).unwrap();
        entry.v = 2;
        assert!(matches!(
            Entry::decode(&entry.encode().unwrap()),
            Err(EntryError::Version(2))
        ));
        assert!(Entry::decode(b"\x00").is_err());
    }
}
