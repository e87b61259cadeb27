//! The streams and key-value buckets, created by the stack's administrator (never by the
//! services themselves, whose users may not alter streams).
//!
//! Every stream and bucket is bounded (age, bytes, message size), so that no client can fill the
//! server's disk: `docs/configuration.md` lists the limits and their defaults.

use crate::BusError;
use airlock_protocol::MAX_MESSAGE_BYTES;
use airlock_protocol::roles;
use airlock_protocol::subjects::{
    AUDIT_STREAM, AUDITOR_BUCKET, DEAD_LETTER_PREFIX, DEAD_LETTER_STREAM, EVENTS_STREAM, audit_subjects, event_subjects,
};
use async_nats::jetstream::{self, kv, stream};
use std::time::Duration;

const MIB: i64 = 1 << 20;
const GIB: i64 = 1 << 30;
const DAY: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone, Debug)]
pub struct StreamSettings {
    /// Replicas of every stream and bucket (3 in a clustered deployment).
    pub replicas: usize,
    /// How long request events are kept in the events stream (the audit log keeps them longer).
    pub events_max_age: Duration,
    /// The events stream's size bound; the oldest events go first (the auditor records any it
    /// had not logged yet as a gap).
    pub events_max_bytes: i64,
    /// The audit stream's size bound (the audit store, not this stream, is the log).
    pub audit_max_bytes: i64,
    /// Window in which a repeated `Nats-Msg-Id` is dropped: it covers a publisher's retries
    /// after a lost ack (ids are random per message, so nothing else needs it).
    pub duplicate_window: Duration,
    /// How long services keep per-request records (claims, decisions, runs).
    pub records_max_age: Duration,
    /// Each service bucket's size bound.
    pub bucket_max_bytes: i64,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            replicas: 1,
            events_max_age: 30 * DAY,
            events_max_bytes: 2 * GIB,
            audit_max_bytes: GIB,
            duplicate_window: Duration::from_secs(15 * 60),
            records_max_age: 7 * DAY,
            bucket_max_bytes: 256 * MIB,
        }
    }
}

fn events_stream(settings: &StreamSettings) -> stream::Config {
    stream::Config {
        name: EVENTS_STREAM.to_owned(),
        description: Some("Airlock request events".to_owned()),
        subjects: event_subjects(),
        retention: stream::RetentionPolicy::Limits,
        discard: stream::DiscardPolicy::Old,
        storage: stream::StorageType::File,
        max_age: settings.events_max_age,
        max_bytes: settings.events_max_bytes,
        duplicate_window: settings.duplicate_window,
        num_replicas: settings.replicas,
        max_message_size: MAX_MESSAGE_BYTES as i32,
        allow_direct: true,
        ..Default::default()
    }
}

fn audit_stream(settings: &StreamSettings) -> stream::Config {
    stream::Config {
        name: AUDIT_STREAM.to_owned(),
        description: Some("Airlock audit log entries, checkpoints and receipts (auditor only)".to_owned()),
        subjects: audit_subjects(),
        retention: stream::RetentionPolicy::Limits,
        discard: stream::DiscardPolicy::Old,
        storage: stream::StorageType::File,
        max_bytes: settings.audit_max_bytes,
        duplicate_window: settings.duplicate_window,
        num_replicas: settings.replicas,
        max_message_size: MAX_MESSAGE_BYTES as i32,
        allow_direct: true,
        ..Default::default()
    }
}

fn dead_letter_stream(settings: &StreamSettings) -> stream::Config {
    stream::Config {
        name: DEAD_LETTER_STREAM.to_owned(),
        description: Some("Messages Airlock's services set aside after repeated failures".to_owned()),
        subjects: vec![format!("{DEAD_LETTER_PREFIX}.>")],
        retention: stream::RetentionPolicy::Limits,
        discard: stream::DiscardPolicy::Old,
        storage: stream::StorageType::File,
        max_age: settings.events_max_age,
        max_bytes: settings.bucket_max_bytes,
        duplicate_window: settings.duplicate_window,
        num_replicas: settings.replicas,
        max_message_size: MAX_MESSAGE_BYTES as i32,
        allow_direct: true,
        ..Default::default()
    }
}

fn bucket(name: &str, settings: &StreamSettings) -> kv::Config {
    // The auditor's bucket holds the log's head and lease: it must never age out.
    let max_age = if name == AUDITOR_BUCKET {
        Duration::ZERO
    } else {
        settings.records_max_age
    };
    kv::Config {
        bucket: name.to_owned(),
        description: format!("Airlock state of {name}"),
        history: 1,
        storage: stream::StorageType::File,
        num_replicas: settings.replicas,
        max_age,
        max_bytes: settings.bucket_max_bytes,
        max_value_size: MAX_MESSAGE_BYTES as i32,
        ..Default::default()
    }
}

/// Creates (or brings up to date) the streams and every service's bucket.
pub async fn ensure_streams(js: &jetstream::Context, settings: &StreamSettings) -> Result<(), BusError> {
    for config in [
        events_stream(settings),
        audit_stream(settings),
        dead_letter_stream(settings),
    ] {
        let name = config.name.clone();
        js.create_or_update_stream(config).await.map_err(|e| BusError::Setup {
            what: format!("stream {name}"),
            source: Box::new(e),
        })?;
    }
    for name in roles::services().filter_map(|s| s.bucket) {
        js.create_or_update_key_value(bucket(name, settings))
            .await
            .map_err(|e| BusError::Setup {
                what: format!("bucket {name}"),
                source: Box::new(e),
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No client can fill the server's disk: every stream and bucket has a size bound and a
    /// message size bound (once, 31.5 MB of labels cost 186 MB of disk).
    #[test]
    fn every_stream_and_bucket_is_bounded() {
        let settings = StreamSettings::default();
        for stream in [
            events_stream(&settings),
            audit_stream(&settings),
            dead_letter_stream(&settings),
        ] {
            assert!(stream.max_bytes > 0, "{} has no size bound", stream.name);
            assert_eq!(stream.max_message_size, MAX_MESSAGE_BYTES as i32, "{}", stream.name);
            assert_eq!(stream.discard, stream::DiscardPolicy::Old, "{}", stream.name);
        }
        for service in roles::services() {
            let Some(name) = service.bucket else { continue };
            let kv = bucket(name, &settings);
            assert!(kv.max_bytes > 0 && kv.max_value_size > 0, "{name} is unbounded");
        }
        // JetStream reserves every bound against the server's store: they must fit the embedded
        // server's 10 GB with room to spare.
        let buckets = roles::services().filter(|s| s.bucket.is_some()).count() as i64;
        let reserved = settings.events_max_bytes + settings.audit_max_bytes + settings.bucket_max_bytes * (buckets + 1);
        assert!(reserved < 8 * GIB, "{reserved} bytes reserved");
    }
}
