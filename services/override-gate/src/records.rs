//! What the gate keeps in its key-value bucket: each request's state (pending with the approvals
//! counted so far, or decided with the events to publish). Remembered approvals live beside
//! them under their own keys (`remembered.rs`).

use airlock_approvals::Approval;
use airlock_protocol::{Assessment, Event, ExecutionRequest, OverrideAsked};
use serde::{Deserialize, Serialize};

/// What the gate remembers of a request. (Boxed where large; records are written a few times
/// per request, so their in-memory size does not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Record {
    Pending {
        request: Box<ExecutionRequest>,
        assessment: Assessment,
        asked: OverrideAsked,
        /// The request's trace, so that a denial at the deadline (decided outside any message)
        /// joins it.
        #[serde(default)]
        traceparent: Option<String>,
        /// Approvals counted so far, under the two-person rule.
        #[serde(default)]
        approvals: Vec<Approval>,
        /// Chats that refused the request for good (`chat_refused`), so not asked there.
        #[serde(default)]
        chats_refused: Vec<String>,
    },
    /// Decided; `events` are what the decision publishes (decided, and terminal for denials).
    Decided { events: Vec<Event>, published: bool },
}

/// One request waiting for a human, as `airlock override list` shows it: a wire type, so it
/// lives in the protocol (the clients read it too).
pub use airlock_protocol::PendingOverride;
