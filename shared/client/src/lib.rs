//! Airlock's Rust client: find the running stack, submit code as a client user, stream its
//! output, wait for its one terminal event and its audit receipt, check the receipt, and (as the
//! operator) list and answer overrides. The `airlock` CLI is built on it; the Python client
//! (`clients/python`) offers the same surface.
//!
//! ```no_run
//! # async fn example() -> Result<(), airlock_client::ClientError> {
//! use airlock_client::{Client, Submission};
//! let client = Client::connect(airlock_client::Connect::default()).await?;
//! let result = client.run(Submission::python("print('hello')")).await?;
//! assert_eq!(result.terminal.stdout, b"hello\n");
//! client.verify_receipt(&result)?;
//! # Ok(())
//! # }
//! ```

mod error;
pub mod home;
pub mod overrides;
pub mod request;
mod result;

pub use error::ClientError;
pub use home::{StackHome, StackInfo};
pub use overrides::{AnswerOutcome, PendingOverride, RememberedApproval};
pub use request::{Request, Submission};
pub use result::{ReceiptError, RunResult, VerifiedReceipt};

use airlock_protocol::roles;
use std::path::PathBuf;
use std::time::Duration;

/// Where the stack is and who to be: everything optional, found through `$AIRLOCK_HOME` (as the
/// CLI finds it) when not given.
#[derive(Clone, Debug, Default)]
pub struct Connect {
    /// The stack's home (default: `$AIRLOCK_HOME`, else the user's data directory).
    pub home: Option<PathBuf>,
    /// NATS URL(s), comma-separated (default: `$AIRLOCK_NATS_URL`, else the running stack's).
    pub url: Option<String>,
    /// The user's nkey seed file (default: `creds/<user>.nk` in the home).
    pub creds: Option<PathBuf>,
    /// The client user (default: `mai`).
    pub user: Option<String>,
}

/// A connection to a stack as one client user.
#[derive(Clone)]
pub struct Client {
    nats: async_nats::Client,
    user: String,
    home: StackHome,
    /// The key override answers are signed with (default: `keys/approver.key` in the home).
    approver_key: Option<PathBuf>,
    /// The operator whose own key signs answers (`airlock keys add-operator NAME`): answers are
    /// that person's, whatever `who` a caller passes.
    operator: Option<String>,
}

/// How long a fresh connection may take before the stack counts as unreachable.
const CONNECT_PATIENCE: Duration = Duration::from_secs(5);

impl Client {
    pub async fn connect(options: Connect) -> Result<Client, ClientError> {
        let user = options.user.unwrap_or_else(|| roles::MAI.user.to_owned());
        let home = StackHome::locate(options.home)?;
        let nats = connect_as(&home, options.url, options.creds, &user).await?;
        Ok(Self::from_connection(nats, user, home))
    }

    /// A client over a connection made elsewhere (by [`connect_with`], say, with a deployment's
    /// several URLs and TLS), as `user`, for the stack in `home`.
    pub fn from_connection(nats: async_nats::Client, user: impl Into<String>, home: StackHome) -> Client {
        Client {
            nats,
            user: user.into(),
            home,
            approver_key: None,
            operator: None,
        }
    }

    /// Answers overrides as operator `name`, with that person's own key
    /// (`keys/operators/<name>.key`, made by `airlock keys add-operator`): the gate counts the
    /// answer as that person's, so the two-person rule counts people, not typed names.
    pub fn as_operator(mut self, name: impl Into<String>) -> Client {
        let name = name.into();
        self.approver_key = Some(self.home.operator_key(&name));
        self.operator = Some(name);
        self
    }

    /// Signs override answers with this key file rather than `keys/approver.key` in the home.
    pub fn with_approver_key(mut self, path: impl Into<PathBuf>) -> Client {
        self.approver_key = Some(path.into());
        self
    }

    /// The underlying NATS connection.
    pub fn nats(&self) -> &async_nats::Client {
        &self.nats
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn home(&self) -> &StackHome {
        &self.home
    }

    /// Checks a result's receipt (see [`RunResult::verify_receipt`]) against the stack's auditor
    /// keys: its key set (`keys/auditor.keys`, so receipts signed before a key rotation still
    /// verify) and its current key (`keys/auditor.pub`).
    pub fn verify_receipt(&self, result: &RunResult) -> Result<VerifiedReceipt, ClientError> {
        result.verify_receipt(&self.home.auditor_keys()?)
    }
}

/// Connects to the stack in `home` as `user`, waiting briefly so that a dead server is reported
/// as such rather than as a timeout later.
pub async fn connect_as(
    home: &StackHome,
    url: Option<String>,
    creds: Option<PathBuf>,
    user: &str,
) -> Result<async_nats::Client, ClientError> {
    let url = match url {
        Some(url) => url,
        None => home.nats_url()?,
    };
    let creds = creds.unwrap_or_else(|| home.creds(user));
    connect_with(&airlock_bus::ConnectConfig::for_user(url, user, creds)).await
}

/// Connects with a complete configuration (several URLs, TLS), waiting as [`connect_as`] does.
pub async fn connect_with(config: &airlock_bus::ConnectConfig) -> Result<async_nats::Client, ClientError> {
    // The server is normally up: connect at once. Only if that fails, keep trying in the
    // background for a while, so that a server restarting is waited for.
    if let Ok(Ok(client)) = tokio::time::timeout(CONNECT_PATIENCE, airlock_bus::connect_now(config)).await {
        return Ok(client);
    }
    let client = airlock_bus::connect(config).await?;
    let started = tokio::time::Instant::now();
    // A flush is queued until the handshake is done and returns with the server's PONG: the
    // earliest moment the connection is known to work, without polling for it.
    if let Ok(Ok(())) = tokio::time::timeout(CONNECT_PATIENCE, client.flush()).await
        && client.connection_state() == async_nats::connection::State::Connected
    {
        return Ok(client);
    }
    while started.elapsed() < CONNECT_PATIENCE {
        if client.connection_state() == async_nats::connection::State::Connected {
            return Ok(client);
        }
        // A handshake on loopback takes a millisecond or two: a coarse poll would be most of a
        // short-lived `airlock run`'s time.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Err(ClientError::Unreachable {
        url: config.url.clone(),
        user: config.name.trim_start_matches("airlock-").to_owned(),
    })
}
