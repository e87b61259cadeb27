//! Key rotation, as the auditor sees it: SIGHUP re-reads the key files (`airlock keys rotate
//! auditor` replaced `key_file`), and the tree as it stands is signed with the new key at once
//! (the `checkpoint` object rewritten and published), so the switch shows without waiting for an
//! event; an auditor started after a rotation does the same when the store's checkpoint is not
//! signed by its keys. Nothing is committed differently: the next batch is signed with the new
//! key like any other.

use crate::error::Error;
use crate::service::{Auditor, store_step};
use tokio_util::sync::CancellationToken;

impl Auditor {
    /// SIGHUP: the key files are read again (`airlock keys rotate auditor` replaced
    /// `key_file`). With new keys, the tree as it stands is signed again at once and the
    /// `checkpoint` object rewritten, so the switch shows without waiting for an event; what is
    /// pending is committed under the new keys. Unreadable key files keep the keys in use.
    pub(crate) async fn reload_keys(&mut self, shutdown: &CancellationToken) -> Result<(), Error> {
        let keys = match self.config.signing_keys() {
            Ok(keys) => keys,
            Err(e) => {
                self.counters.incr("key_reload_failures");
                tracing::error!(error = %airlock_bus::error_text(&e), "cannot read the new keys; signing with the keys in use");
                return Ok(());
            }
        };
        let verifiers = |keys: &[airlock_protocol::SigningKey]| keys.iter().map(|k| k.verifier()).collect::<Vec<_>>();
        if verifiers(&keys) == verifiers(self.writer.keys()) {
            tracing::info!("SIGHUP: the signing keys are unchanged");
            return Ok(());
        }
        tracing::info!(keys = ?verifiers(&keys).iter().map(ToString::to_string).collect::<Vec<_>>(), "signing with new keys");
        self.writer.set_keys(keys);
        self.counters.incr("key_reloads");
        if !self.pending.is_empty() {
            return self.commit(shutdown).await;
        }
        // The tree as the writer holds it is written only once every commit's own checkpoint is.
        self.finish_all().await?;
        self.sign_current_tree(shutdown).await
    }

    /// At start: a store whose checkpoint is not signed by the keys in use (they were rotated
    /// while the auditor was stopped) gets the tree as it stands signed with them.
    pub(crate) async fn sign_with_current_keys(&mut self, shutdown: &CancellationToken) -> Result<(), Error> {
        let verifiers: Vec<_> = self.writer.keys().iter().map(|k| k.verifier()).collect();
        let reader = airlock_auditlog::reader::LogReader::new(self.store.clone());
        let stored = store_step(shutdown, "reading the checkpoint", || reader.checkpoint()).await;
        let current = match stored {
            Ok(Some((signed, _))) => {
                signed.checkpoint.size == self.writer.size()
                    && signed
                        .note
                        .signatures
                        .iter()
                        .any(|s| verifiers.iter().any(|v| v.name() == s.name && v.key_id() == s.key_id))
            }
            Ok(None) => true,
            Err(e) => {
                tracing::warn!(error = %airlock_bus::error_text(&e), "cannot read the checkpoint to see who signed it");
                true
            }
        };
        if current {
            return Ok(());
        }
        tracing::info!("the store's checkpoint is not signed by the keys in use: signing it again");
        self.sign_current_tree(shutdown).await
    }

    /// The tree as it stands, signed with the keys in use: written as `checkpoint` and
    /// published, so that a key switch shows without waiting for an event.
    async fn sign_current_tree(&mut self, shutdown: &CancellationToken) -> Result<(), Error> {
        if self.writer.size() == 0 {
            return Ok(());
        }
        let signed = self.writer.checkpoint().to_text();
        store_step(shutdown, "writing the checkpoint signed with the new key", || {
            self.store.put_checkpoint(&signed)
        })
        .await?;
        let key_id = self.writer.keys().first().map(|k| k.key_id()).unwrap_or_default();
        let message = crate::commit::Message {
            subject: airlock_protocol::subjects::AUDIT_CHECKPOINT.to_owned(),
            payload: bytes::Bytes::from(signed),
            id: format!("checkpoint.{}.{key_id:08x}", self.writer.size()),
        };
        self.send_all(vec![message], shutdown).await
    }
}

/// SIGHUP, when it can be listened for.
pub(crate) fn hangups() -> Option<tokio::signal::unix::Signal> {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP: a new key takes a restart");
            None
        }
    }
}

pub(crate) async fn next_hangup(hangups: &mut Option<tokio::signal::unix::Signal>) {
    match hangups {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}
