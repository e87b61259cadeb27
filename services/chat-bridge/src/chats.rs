//! Starting each configured chat system: its adapter for the outbox, and whatever delivers its
//! humans' answers (Matrix's sync loop; the HTTP endpoints of Slack, Discord and webhooks).

use crate::adapter::{Adapter, ChatError};
use crate::answers::Core;
use crate::config::Config;
use crate::discord::Discord;
use crate::http::Endpoints;
use crate::matrix::Matrix;
use crate::service::BridgeError;
use crate::slack::Slack;
use crate::webhook::Webhook;
use airlock_protocol::SigningKey;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Every configured chat, built (secrets read) but not started.
pub struct Chats {
    pub matrix: Option<Arc<Matrix>>,
    pub slack: Option<Arc<Slack>>,
    pub discord: Option<Arc<Discord>>,
    pub webhook: Option<Arc<Webhook>>,
}

impl Chats {
    pub fn build(config: &Config, key: &SigningKey) -> Result<Self, ChatError> {
        Ok(Self {
            matrix: config
                .matrix
                .clone()
                .map(|m| Matrix::new(m, config.matrix_escalation_rooms.clone()).map(Arc::new))
                .transpose()?,
            slack: config.slack.clone().map(|s| Slack::new(s).map(Arc::new)).transpose()?,
            discord: config
                .discord
                .clone()
                .map(|d| Discord::new(d).map(Arc::new))
                .transpose()?,
            webhook: config
                .webhook
                .clone()
                .map(|w| Webhook::new(w, key.clone()).map(Arc::new))
                .transpose()?,
        })
    }

    pub fn adapters(&self) -> Vec<Arc<dyn Adapter>> {
        let mut all: Vec<Arc<dyn Adapter>> = Vec::new();
        if let Some(m) = &self.matrix {
            all.push(m.clone());
        }
        if let Some(s) = &self.slack {
            all.push(s.clone());
        }
        if let Some(d) = &self.discord {
            all.push(d.clone());
        }
        if let Some(w) = &self.webhook {
            all.push(w.clone());
        }
        all
    }
}

/// Starts the readers (Matrix sync, the HTTP endpoints); returns the adapters for the outbox.
pub async fn start(
    config: &Config,
    key: &SigningKey,
    core: Arc<Core>,
    shutdown: CancellationToken,
) -> Result<Vec<Arc<dyn Adapter>>, BridgeError> {
    let chats = Chats::build(config, key)?;
    if let (Some(matrix), Some(settings)) = (&chats.matrix, &config.matrix) {
        match matrix.whoami().await {
            Ok(who) if who == settings.user_id => tracing::info!(user = who, "matrix token checked"),
            Ok(who) => tracing::warn!(
                token_user = who,
                configured = settings.user_id,
                "the matrix token belongs to another user"
            ),
            // The homeserver may be down: the sync loop keeps trying.
            Err(e) => tracing::warn!(error = %airlock_protocol::error_chain(&e), "matrix homeserver not reachable yet"),
        }
        tokio::spawn(matrix.clone().run_sync(core.clone(), shutdown.clone()));
    }
    if chats.slack.is_some() || chats.discord.is_some() || chats.webhook.is_some() || config.public_url.is_some() {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| BridgeError::Listen {
                addr: config.listen,
                source,
            })?;
        tracing::info!(listen = %config.listen, "interaction endpoints listening");
        let endpoints = Arc::new(Endpoints {
            core,
            slack: chats.slack.clone(),
            discord: chats.discord.clone(),
            webhook: chats.webhook.clone(),
        });
        tokio::spawn(crate::http::serve(listener, endpoints, shutdown));
    }
    Ok(chats.adapters())
}
