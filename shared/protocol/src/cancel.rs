//! Cancelling a request: its client asks (a `cancel_requested` event on the client's own
//! subject, so the server vouches for who asked and the audit log keeps it), and whichever
//! service holds the request then stops it and ends it with a `cancelled` terminal event: the
//! gate while it is assessed or waits for a human, the executor while it waits for its turn or
//! runs. A request that has already ended stays as it ended.

use crate::ids::RequestId;
use crate::text::visible_line;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest reason a client may give, in bytes.
pub const MAX_CANCEL_REASON: usize = 1000;

/// The `cancel_requested` event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CancelRequest {
    /// Why, in the client's words (shown as data, never as Airlock's).
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CancelError {
    #[error("a cancellation needs a reason")]
    NoReason,
    #[error("the reason is {0} bytes; at most {MAX_CANCEL_REASON}")]
    ReasonTooLong(usize),
}

impl CancelRequest {
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }

    /// Whether a service may act on it: a reason, bounded.
    pub fn check(&self) -> Result<(), CancelError> {
        if self.reason.trim().is_empty() {
            return Err(CancelError::NoReason);
        }
        if self.reason.len() > MAX_CANCEL_REASON {
            return Err(CancelError::ReasonTooLong(self.reason.len()));
        }
        Ok(())
    }

    /// The terminal event's reason: who asked (the request's client, which the subject and the
    /// server's permissions vouch for) and why, the why as quoted data.
    pub fn ended_reason(&self, request_id: &RequestId) -> String {
        format!(
            "cancelled by its client {}: \"{}\"",
            request_id.client().unwrap_or("(none)"),
            visible_line(self.reason.trim())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_required_bounded_and_shown_as_data() {
        assert_eq!(CancelRequest::new("  ").check(), Err(CancelError::NoReason));
        assert_eq!(
            CancelRequest::new("x".repeat(MAX_CANCEL_REASON + 1)).check(),
            Err(CancelError::ReasonTooLong(MAX_CANCEL_REASON + 1))
        );
        let cancel = CancelRequest::new("the user left\u{202E}");
        assert_eq!(cancel.check(), Ok(()));
        let rid = RequestId::parse("mai.r1").unwrap();
        assert_eq!(
            cancel.ended_reason(&rid),
            "cancelled by its client mai: \"the user left⟨U+202E⟩\""
        );
    }
}
