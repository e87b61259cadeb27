//! Where a request is on its way, for the client that submitted it: assessed, waiting for a
//! human (and where), approved or denied by whom, queued behind others, waiting for the audit
//! log or the container engine, running, retried. Each is a `progress` event on
//! `airlock.progress.<client>.<local>`, which only that client (and operators) may read, and
//! which the audit log keeps like every event. Progress never decides anything: the terminal
//! event alone ends a request.

use crate::assessment::Level;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One stage of a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum Progress {
    /// Its packages are being resolved to wheels and their code rated, before it is assessed.
    ResolvingPackages { packages: u32 },
    /// Rated by the assessor.
    Assessed { level: Level },
    /// A human is asked; no answer by `deadline_ms` is a denial.
    WaitingForHuman {
        deadline_ms: i64,
        /// Where the request was posted (`matrix`, `slack`, ... or `airlock override list`).
        #[serde(default)]
        posted_to: Vec<String>,
        /// Chats that refused it for good (`chat_refused`); said again when one refuses, so
        /// that a request no chat could take says so instead of waiting in silence.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        chats_refused: Vec<String>,
    },
    /// Approved (by policy, a human, or a remembered approval).
    Approved { by: String },
    /// Denied (by policy, a human, or the deadline); the terminal event follows.
    Denied { by: String },
    /// Waiting for a sandbox slot behind `ahead` other requests.
    Queued { ahead: u32 },
    /// Waiting until the audit log can record the run (`[auditor] required`).
    WaitingForAuditLog { detail: String },
    /// Waiting for the container engine to come back.
    WaitingForEngine { detail: String },
    /// The program is running.
    Running,
    /// The run was interrupted by the infrastructure and is run again, once, in a fresh
    /// container.
    Retrying { reason: String },
}

impl Progress {
    /// The stage's name on the wire (`waiting_for_human`, ...).
    pub fn stage(&self) -> &'static str {
        match self {
            Progress::ResolvingPackages { .. } => "resolving_packages",
            Progress::Assessed { .. } => "assessed",
            Progress::WaitingForHuman { .. } => "waiting_for_human",
            Progress::Approved { .. } => "approved",
            Progress::Denied { .. } => "denied",
            Progress::Queued { .. } => "queued",
            Progress::WaitingForAuditLog { .. } => "waiting_for_audit_log",
            Progress::WaitingForEngine { .. } => "waiting_for_engine",
            Progress::Running => "running",
            Progress::Retrying { .. } => "retrying",
        }
    }

    /// One line for a person (`airlock run` prints these on stderr).
    pub fn describe(&self) -> String {
        match self {
            Progress::ResolvingPackages { packages } => {
                format!("resolving {packages} package(s) to wheels and rating their code")
            }
            Progress::Assessed { level } => format!("assessed: {level}"),
            Progress::WaitingForHuman {
                deadline_ms,
                posted_to,
                chats_refused,
            } => {
                let left = (deadline_ms - crate::ids::now_ms()).max(0) / 1000;
                let mut place = match posted_to.is_empty() {
                    true => "`airlock override list`".to_owned(),
                    false => posted_to.join(", "),
                };
                if !chats_refused.is_empty() {
                    let no_chat = if posted_to.is_empty() {
                        "no chat could take it: "
                    } else {
                        ""
                    };
                    place = format!("{place}; {no_chat}refused by {}", chats_refused.join(", "));
                }
                format!("waiting for a human ({place}); {left} s left to answer")
            }
            Progress::Approved { by } => format!("approved by {by}"),
            Progress::Denied { by } => format!("denied by {by}"),
            Progress::Queued { ahead } => format!("queued behind {ahead} other requests"),
            Progress::WaitingForAuditLog { detail } => format!("waiting for the audit log: {detail}"),
            Progress::WaitingForEngine { detail } => format!("waiting for the container engine: {detail}"),
            Progress::Running => "running".to_owned(),
            Progress::Retrying { reason } => format!("interrupted ({reason}); running it again"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_tagged_on_the_wire() {
        let waiting = Progress::WaitingForHuman {
            deadline_ms: 5,
            posted_to: vec!["matrix".into()],
            chats_refused: vec![],
        };
        let json = serde_json::to_value(&waiting).expect("json");
        assert_eq!(json["stage"], "waiting_for_human");
        assert_eq!(json["stage"], waiting.stage());
        assert_eq!(serde_json::from_value::<Progress>(json).expect("back"), waiting);
        assert_eq!(
            serde_json::to_value(Progress::Running).expect("json")["stage"],
            "running"
        );
    }

    #[test]
    fn a_request_no_chat_could_take_says_so() {
        let far = crate::ids::now_ms() + 60_000;
        let nowhere = Progress::WaitingForHuman {
            deadline_ms: far,
            posted_to: vec![],
            chats_refused: vec!["matrix".into(), "slack".into()],
        };
        let said = nowhere.describe();
        assert!(
            said.starts_with(
                "waiting for a human (`airlock override list`; no chat could take it: refused by matrix, slack)"
            ),
            "{said}"
        );
        let partly = Progress::WaitingForHuman {
            deadline_ms: far,
            posted_to: vec!["discord".into()],
            chats_refused: vec!["slack".into()],
        };
        assert!(
            partly
                .describe()
                .starts_with("waiting for a human (discord; refused by slack)"),
            "{}",
            partly.describe()
        );
        // An older reader's message (no refusals) reads as none.
        let json = serde_json::json!({"stage": "waiting_for_human", "deadline_ms": 1, "posted_to": ["matrix"]});
        let read: Progress = serde_json::from_value(json).expect("read");
        assert!(matches!(read, Progress::WaitingForHuman { chats_refused, .. } if chats_refused.is_empty()));
    }
}
