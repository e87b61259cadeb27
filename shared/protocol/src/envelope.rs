//! The versioned envelope every message travels in.

use crate::event::{Event, EventKind};
use crate::ids::{IdError, MessageId, RequestId, now_ms};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The schema version this build speaks. A message of any other version is refused.
pub const SCHEMA_VERSION: u32 = 1;
/// Largest message accepted on the bus (the NATS server's `max_payload` is set to match).
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Producer {
    Mai,
    Assessor,
    OverrideGate,
    Executor,
    Auditor,
    Operator,
    /// A chat bridge relaying a human's answer.
    ChatBridge,
}

impl Producer {
    pub const ALL: [Producer; 7] = [
        Producer::Mai,
        Producer::Assessor,
        Producer::OverrideGate,
        Producer::Executor,
        Producer::Auditor,
        Producer::Operator,
        Producer::ChatBridge,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Producer::Mai => "mai",
            Producer::Assessor => "assessor",
            Producer::OverrideGate => "override_gate",
            Producer::Executor => "executor",
            Producer::Auditor => "auditor",
            Producer::Operator => "operator",
            Producer::ChatBridge => "chat_bridge",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Envelope {
    /// Always [`SCHEMA_VERSION`] for messages this build writes.
    pub schema: u32,
    pub id: MessageId,
    pub request_id: RequestId,
    pub producer: Producer,
    /// Unix milliseconds at which the producer created the message.
    pub time_ms: i64,
    pub event: Event,
}

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("message is {size} bytes; at most {limit} are accepted")]
    Oversized { size: usize, limit: usize },
    #[error("message has schema version {found}; this build speaks version {supported}")]
    UnknownSchemaVersion { found: u32, supported: u32 },
    #[error("malformed message")]
    Malformed(#[source] rmp_serde::decode::Error),
    #[error("encoding a message")]
    Encode(#[source] rmp_serde::encode::Error),
    #[error("subject {subject:?} does not match the message ({detail})")]
    SubjectMismatch { subject: String, detail: String },
    #[error("a {kind} event cannot come from {producer:?}")]
    ProducerMismatch { kind: EventKind, producer: Producer },
    #[error("bad id")]
    BadId(#[from] IdError),
}

/// The fields read before anything else, so that a message of another version is refused as
/// such rather than as malformed.
#[derive(Deserialize)]
struct Header {
    schema: u32,
}

impl Envelope {
    pub fn new(request_id: RequestId, producer: Producer, event: Event) -> Self {
        Self {
            schema: SCHEMA_VERSION,
            id: MessageId::new(),
            request_id,
            producer,
            time_ms: now_ms(),
            event,
        }
    }

    pub fn kind(&self) -> EventKind {
        self.event.kind()
    }

    pub fn subject(&self) -> String {
        self.kind().subject(&self.request_id)
    }

    /// Whether the stream must refuse this event when its subject already holds one: the
    /// events that happen once per request ([`EventKind::once_per_request`]), except the start
    /// of a request's repeated attempt (an interrupted run run again, `attempt` > 1), which the
    /// executors' claim on the attempt keeps single instead.
    pub fn expects_first_on_its_subject(&self) -> bool {
        match &self.event {
            Event::ExecStarted(started) => started.attempt <= 1,
            event => event.kind().once_per_request(),
        }
    }

    /// The JetStream de-duplication id (`Nats-Msg-Id`): the message's own random id, so a retry
    /// of the same message is dropped while no one (Mai included) can guess and pre-claim the id
    /// of an event yet to come. Events that happen once per request are kept single by the
    /// stream itself ([`EventKind::once_per_request`]), not by their id.
    pub fn dedup_id(&self) -> &str {
        self.id.as_str()
    }

    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let bytes = rmp_serde::to_vec_named(self).map_err(WireError::Encode)?;
        if bytes.len() > MAX_MESSAGE_BYTES {
            return Err(WireError::Oversized {
                size: bytes.len(),
                limit: MAX_MESSAGE_BYTES,
            });
        }
        Ok(bytes)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        if bytes.len() > MAX_MESSAGE_BYTES {
            return Err(WireError::Oversized {
                size: bytes.len(),
                limit: MAX_MESSAGE_BYTES,
            });
        }
        let header: Header = rmp_serde::from_slice(bytes).map_err(WireError::Malformed)?;
        if header.schema != SCHEMA_VERSION {
            return Err(WireError::UnknownSchemaVersion {
                found: header.schema,
                supported: SCHEMA_VERSION,
            });
        }
        rmp_serde::from_slice(bytes).map_err(WireError::Malformed)
    }

    /// Decodes a message and checks that its kind and request id are those its subject names,
    /// and that the producer it names may produce that kind (the server's permissions already
    /// bound who may publish on the subject).
    pub fn decode_on(subject: &str, bytes: &[u8]) -> Result<Self, WireError> {
        let envelope = Self::decode(bytes)?;
        let mismatch = |detail: String| WireError::SubjectMismatch {
            subject: subject.to_owned(),
            detail,
        };
        let (kind, rid) = EventKind::parse_subject(subject).ok_or_else(|| mismatch("not an event subject".into()))?;
        if kind != envelope.kind() {
            return Err(mismatch(format!("a {} event on a {} subject", envelope.kind(), kind)));
        }
        if rid != envelope.request_id.as_str() {
            return Err(mismatch(format!(
                "request {} on the subject of request {rid}",
                envelope.request_id
            )));
        }
        if !crate::roles::may_produce(envelope.producer, kind) {
            return Err(WireError::ProducerMismatch {
                kind,
                producer: envelope.producer,
            });
        }
        Ok(envelope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::{Refusal, RefusalReason};
    use crate::request::{ExecutionRequest, Language};

    fn submitted() -> Envelope {
        Envelope::new(
            RequestId::parse("mai.req-1").unwrap(),
            Producer::Mai,
            Event::Submitted(ExecutionRequest::new(Language::Python, b"print('hi')".to_vec()).label("hi.py")),
        )
    }

    #[test]
    fn round_trip_and_subject() {
        let e = submitted();
        let bytes = e.encode().unwrap();
        assert_eq!(Envelope::decode(&bytes).unwrap(), e);
        assert_eq!(e.subject(), "airlock.submit.mai.req-1");
        assert_eq!(Envelope::decode_on("airlock.submit.mai.req-1", &bytes).unwrap(), e);
        assert_eq!(e.dedup_id(), e.id.as_str());
    }

    #[test]
    fn wrong_subject_is_refused() {
        let bytes = submitted().encode().unwrap();
        assert!(matches!(
            Envelope::decode_on("airlock.decision.mai.req-1", &bytes),
            Err(WireError::SubjectMismatch { .. })
        ));
        assert!(matches!(
            Envelope::decode_on("airlock.submit.mai.req-2", &bytes),
            Err(WireError::SubjectMismatch { .. })
        ));
    }

    #[test]
    fn a_producer_that_may_not_produce_the_kind_is_refused() {
        let mut e = submitted();
        e.producer = Producer::Executor;
        let bytes = e.encode().unwrap();
        assert!(matches!(
            Envelope::decode_on("airlock.submit.mai.req-1", &bytes),
            Err(WireError::ProducerMismatch {
                kind: EventKind::Submitted,
                producer: Producer::Executor
            })
        ));
    }

    #[test]
    fn unknown_version_and_garbage_are_typed_errors() {
        let mut e = submitted();
        e.schema = 2;
        let bytes = rmp_serde::to_vec_named(&e).unwrap();
        assert!(matches!(
            Envelope::decode(&bytes),
            Err(WireError::UnknownSchemaVersion {
                found: 2,
                supported: SCHEMA_VERSION
            })
        ));
        assert!(matches!(Envelope::decode(b"\xc1garbage"), Err(WireError::Malformed(_))));
        assert!(matches!(Envelope::decode(b""), Err(WireError::Malformed(_))));
        let huge = vec![0u8; MAX_MESSAGE_BYTES + 1];
        assert!(matches!(Envelope::decode(&huge), Err(WireError::Oversized { .. })));
    }

    #[test]
    fn dedup_ids_are_per_message() {
        let refusal = |_: ()| {
            Envelope::new(
                RequestId::parse("r").unwrap(),
                Producer::Executor,
                Event::Refused(Refusal {
                    reason: RefusalReason::BadSignature,
                    detail: String::new(),
                    subject: String::new(),
                    message_sha256: String::new(),
                }),
            )
        };
        assert_ne!(refusal(()).dedup_id(), refusal(()).dedup_id());
    }

    proptest::proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = Envelope::decode(&bytes);
        }
    }
}

#[cfg(test)]
mod contract_tests {
    //! The checked-in contract in `schemas/` must match this build: the JSON Schemas, and the
    //! test vectors both ways (decoding the bytes gives the meaning; encoding gives the bytes).
    use super::*;
    use std::path::PathBuf;

    fn schemas_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
    }

    #[test]
    fn checked_in_schemas_are_current() {
        for (name, text) in crate::schema::rendered() {
            let path = schemas_dir().join(name);
            let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                on_disk == text,
                "{} is stale: run `airlock schema write`",
                path.display()
            );
        }
    }

    #[test]
    fn test_vectors_decode_to_their_meaning_and_encode_to_their_bytes() {
        let vectors = crate::schema::vectors();
        assert!(!vectors.is_empty());
        for (name, envelope) in vectors {
            let dir = schemas_dir().join("vectors");
            let bytes = std::fs::read(dir.join(format!("{name}.msgpack"))).expect("vector bytes");
            let meaning: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.json"))).expect("vector json"))
                    .expect("vector json parses");
            let decoded = Envelope::decode(&bytes).expect("vector decodes");
            assert_eq!(decoded, envelope, "{name}");
            assert_eq!(serde_json::to_value(&decoded).expect("json"), meaning, "{name}");
            assert_eq!(envelope.encode().expect("encodes"), bytes, "{name}");
        }
    }
}
