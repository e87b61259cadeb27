//! Connecting to NATS as one of Airlock's users.

use crate::BusError;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct ConnectConfig {
    /// `nats://host:port`, or several separated by commas (a cluster).
    pub url: String,
    /// File holding the user's nkey seed (`SU...`); none for an open server.
    pub nkey_seed_file: Option<PathBuf>,
    /// Connection name shown by the server (`airlock-executor`, ...).
    pub name: String,
    /// Reply subjects go under this prefix, so each user's permissions can allow only its own
    /// inbox (`_INBOX_<user>`).
    pub inbox_prefix: Option<String>,
    /// TLS to the server (a clustered deployment); none: whatever the URL and server say.
    pub tls: Option<TlsSettings>,
}

/// How a client checks the server, and (optionally) proves itself with a certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// The deployment's CA (PEM): the only root trusted for the server's certificate, so a
    /// server presenting a certificate from any other authority is refused.
    pub ca_file: PathBuf,
    /// A client certificate and its key (PEM), for servers that verify clients.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

impl ConnectConfig {
    pub fn new(url: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            nkey_seed_file: None,
            name: name.into(),
            inbox_prefix: None,
            tls: None,
        }
    }

    /// The conventional set-up for Airlock user `user` with its seed in `seed_file`.
    pub fn for_user(url: impl Into<String>, user: &str, seed_file: PathBuf) -> Self {
        Self {
            url: url.into(),
            nkey_seed_file: Some(seed_file),
            name: format!("airlock-{user}"),
            inbox_prefix: Some(inbox_prefix(user)),
            tls: None,
        }
    }

    /// The same, over TLS checked against `tls`.
    pub fn with_tls(mut self, tls: Option<TlsSettings>) -> Self {
        self.tls = tls;
        self
    }
}

/// The inbox prefix of Airlock user `user`.
pub fn inbox_prefix(user: &str) -> String {
    format!("_INBOX_{user}")
}

/// Connects, retrying the first connection and reconnecting forever after, so a service outlives
/// a restart of the NATS server.
pub async fn connect(config: &ConnectConfig) -> Result<async_nats::Client, BusError> {
    connect_with_options(config, true).await
}

/// Connects once, returning when the handshake is done (or failed), and reconnecting forever
/// after. For a short-lived client: the background first attempt of [`connect`] starts on the
/// runtime's next timer tick, a millisecond it has no reason to wait.
pub async fn connect_now(config: &ConnectConfig) -> Result<async_nats::Client, BusError> {
    connect_with_options(config, false).await
}

async fn connect_with_options(config: &ConnectConfig, retry_initial: bool) -> Result<async_nats::Client, BusError> {
    let mut options = async_nats::ConnectOptions::new().name(&config.name);
    if retry_initial {
        options = options.retry_on_initial_connect();
    }
    let mut options = options
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Some(Duration::from_secs(10)))
        .event_callback(|event| async move {
            match event {
                async_nats::Event::Connected => tracing::info!("connected to NATS"),
                async_nats::Event::Disconnected => tracing::warn!("disconnected from NATS; reconnecting"),
                other => tracing::debug!(event = %other, "NATS client event"),
            }
        });
    if let Some(prefix) = &config.inbox_prefix {
        options = options.custom_inbox_prefix(prefix);
    }
    if let Some(path) = &config.nkey_seed_file {
        let seed = std::fs::read_to_string(path).map_err(|e| BusError::Credentials {
            path: path.display().to_string(),
            source: Box::new(e),
        })?;
        let seed = seed.trim().to_owned();
        nkeys::KeyPair::from_seed(&seed).map_err(|e| BusError::Credentials {
            path: path.display().to_string(),
            source: Box::new(e),
        })?;
        options = options.nkey(seed);
    }
    if let Some(tls) = &config.tls {
        // Read up front: with retry_on_initial_connect an unreadable file would otherwise be
        // retried forever in the background instead of reported.
        let files = std::iter::once(&tls.ca_file).chain(tls.client_cert.iter().flat_map(|(c, k)| [c, k]));
        for path in files {
            std::fs::metadata(path).map_err(|e| BusError::Credentials {
                path: path.display().to_string(),
                source: Box::new(e),
            })?;
        }
        // Both ring and aws-lc-rs are linked into the binaries (async-nats, object_store), and
        // rustls panics rather than choose; an already-installed provider is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
        options = options.require_tls(true).add_root_certificates(tls.ca_file.clone());
        if let Some((cert, key)) = &tls.client_cert {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
    }
    let urls: Vec<&str> = config.url.split(',').map(str::trim).filter(|u| !u.is_empty()).collect();
    // With retry_on_initial_connect the future resolves at once and the client connects in the
    // background; a bad URL is the only error left here. Without it, an unreachable server too.
    options.connect(urls).await.map_err(|source| BusError::Connect {
        url: config.url.clone(),
        source,
    })
}
