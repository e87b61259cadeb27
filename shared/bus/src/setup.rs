//! The streams and key-value buckets, created by the stack's administrator (never by the
//! services themselves, whose users may not alter streams).

use crate::BusError;
use airlock_protocol::MAX_MESSAGE_BYTES;
use airlock_protocol::subjects::{
    AUDIT_STREAM, AUDITOR_BUCKET, EVENTS_STREAM, EXECUTOR_BUCKET, GATE_BUCKET, audit_subjects, event_subjects,
};
use async_nats::jetstream::{self, kv, stream};
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct StreamSettings {
    /// Replicas of every stream and bucket (3 in a clustered deployment).
    pub replicas: usize,
    /// How long request events are kept in the events stream (the audit log keeps them longer).
    pub events_max_age: Duration,
    /// Window in which a repeated `Nats-Msg-Id` is dropped; covers restarts of a service that
    /// redoes work it had not acknowledged.
    pub duplicate_window: Duration,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            replicas: 1,
            events_max_age: Duration::from_secs(30 * 24 * 3600),
            duplicate_window: Duration::from_secs(24 * 3600),
        }
    }
}

fn events_stream(settings: &StreamSettings) -> stream::Config {
    stream::Config {
        name: EVENTS_STREAM.to_owned(),
        description: Some("Airlock request events".to_owned()),
        subjects: event_subjects(),
        retention: stream::RetentionPolicy::Limits,
        storage: stream::StorageType::File,
        max_age: settings.events_max_age,
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
        storage: stream::StorageType::File,
        duplicate_window: settings.duplicate_window,
        num_replicas: settings.replicas,
        max_message_size: MAX_MESSAGE_BYTES as i32,
        allow_direct: true,
        ..Default::default()
    }
}

fn bucket(name: &str, settings: &StreamSettings) -> kv::Config {
    kv::Config {
        bucket: name.to_owned(),
        description: format!("Airlock state of {name}"),
        history: 1,
        storage: stream::StorageType::File,
        num_replicas: settings.replicas,
        ..Default::default()
    }
}

/// Creates (or brings up to date) both streams and the services' buckets.
pub async fn ensure_streams(js: &jetstream::Context, settings: &StreamSettings) -> Result<(), BusError> {
    for config in [events_stream(settings), audit_stream(settings)] {
        let name = config.name.clone();
        js.create_or_update_stream(config).await.map_err(|e| BusError::Setup {
            what: format!("stream {name}"),
            detail: e.to_string(),
        })?;
    }
    for name in [GATE_BUCKET, EXECUTOR_BUCKET, AUDITOR_BUCKET] {
        js.create_or_update_key_value(bucket(name, settings))
            .await
            .map_err(|e| BusError::Setup {
                what: format!("bucket {name}"),
                detail: e.to_string(),
            })?;
    }
    Ok(())
}
