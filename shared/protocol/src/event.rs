//! Every kind of event that travels on the bus.

use crate::assessment::Assessment;
use crate::decision::Decided;
use crate::execution::{Activity, Egress, ExecStarted, OutputChunk, Terminal};
use crate::ids::RequestId;
use crate::overrides::{ApprovalRevoked, ChatRefused, OverrideAnswered, OverrideAsked};
use crate::refusal::Refusal;
use crate::request::ExecutionRequest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `assessed` event carries the request on, so the gate needs nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Assessed {
    pub request: ExecutionRequest,
    pub assessment: Assessment,
    /// The digest of the request the assessor rated ([`ExecutionRequest::request_digest`]);
    /// the gate recomputes it from the request before it decides anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<crate::ids::CodeDigest>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Event {
    Submitted(ExecutionRequest),
    Assessed(Box<Assessed>),
    OverrideAsked(OverrideAsked),
    OverrideAnswered(OverrideAnswered),
    Decided(Box<Decided>),
    ExecStarted(ExecStarted),
    Output(OutputChunk),
    Usage(crate::execution::UsageSample),
    Activity(Activity),
    /// What the run did as the host kernel saw it (the executor's, not the program's, account).
    Observed(Box<crate::observed::Observed>),
    Egress(Egress),
    Terminal(Box<Terminal>),
    Refused(Refusal),
    ApprovalRevoked(ApprovalRevoked),
    Progress(crate::progress::Progress),
    CancelRequested(crate::cancel::CancelRequest),
    ChatRefused(ChatRefused),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Submitted,
    Assessed,
    OverrideAsked,
    OverrideAnswered,
    Decided,
    ExecStarted,
    Output,
    Usage,
    Activity,
    Observed,
    Egress,
    Terminal,
    Refused,
    ApprovalRevoked,
    Progress,
    CancelRequested,
    ChatRefused,
}

impl EventKind {
    pub const ALL: [EventKind; 17] = [
        EventKind::Submitted,
        EventKind::Assessed,
        EventKind::OverrideAsked,
        EventKind::OverrideAnswered,
        EventKind::Decided,
        EventKind::ExecStarted,
        EventKind::Output,
        EventKind::Usage,
        EventKind::Activity,
        EventKind::Observed,
        EventKind::Egress,
        EventKind::Terminal,
        EventKind::Refused,
        EventKind::ApprovalRevoked,
        EventKind::Progress,
        EventKind::CancelRequested,
        EventKind::ChatRefused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Submitted => "submitted",
            EventKind::Assessed => "assessed",
            EventKind::OverrideAsked => "override_asked",
            EventKind::OverrideAnswered => "override_answered",
            EventKind::Decided => "decided",
            EventKind::ExecStarted => "exec_started",
            EventKind::Output => "output",
            EventKind::Usage => "usage",
            EventKind::Activity => "activity",
            EventKind::Observed => "observed",
            EventKind::Egress => "egress",
            EventKind::Terminal => "terminal",
            EventKind::Refused => "refused",
            EventKind::ApprovalRevoked => "approval_revoked",
            EventKind::Progress => "progress",
            EventKind::CancelRequested => "cancel_requested",
            EventKind::ChatRefused => "chat_refused",
        }
    }

    /// The subject prefix; the request id is the last token.
    pub fn subject_prefix(self) -> &'static str {
        match self {
            EventKind::Submitted => "airlock.submit",
            EventKind::Assessed => "airlock.assessed",
            EventKind::OverrideAsked => "airlock.override.asked",
            EventKind::OverrideAnswered => "airlock.override.answer",
            EventKind::Decided => "airlock.decision",
            EventKind::ExecStarted => "airlock.exec.started",
            EventKind::Output => "airlock.exec.output",
            EventKind::Usage => "airlock.exec.usage",
            EventKind::Activity => "airlock.exec.activity",
            EventKind::Observed => "airlock.exec.observed",
            EventKind::Egress => "airlock.exec.egress",
            EventKind::Terminal => "airlock.terminal",
            EventKind::Refused => "airlock.refused",
            EventKind::ApprovalRevoked => "airlock.approval.revoked",
            EventKind::Progress => "airlock.progress",
            EventKind::CancelRequested => "airlock.cancel",
            EventKind::ChatRefused => "airlock.chat.refused",
        }
    }

    /// The subject of this kind of event for a request: the prefix, then the request id, whose
    /// client part (`<client>.<local>`) is a token of its own, so that permissions can give each
    /// client its own results.
    pub fn subject(self, request_id: &RequestId) -> String {
        format!("{}.{}", self.subject_prefix(), request_id)
    }

    /// The subject of this kind of event for every request of one client.
    pub fn client_filter(self, client: &str) -> String {
        format!("{}.{client}.*", self.subject_prefix())
    }

    /// Subject filter matching this kind for every request: ids of one token (no client, or the
    /// reserved `unknown`) and of two (`<client>.<local>`). Submissions always name a client.
    pub fn subject_filter(self) -> String {
        match self {
            EventKind::Submitted | EventKind::CancelRequested => format!("{}.*.*", self.subject_prefix()),
            _ => format!("{}.>", self.subject_prefix()),
        }
    }

    /// Reads the kind and request id a subject names.
    pub fn parse_subject(subject: &str) -> Option<(EventKind, &str)> {
        EventKind::ALL.into_iter().find_map(|kind| {
            let rid = subject.strip_prefix(kind.subject_prefix())?.strip_prefix('.')?;
            let tokens = rid.split('.').count();
            let well_formed = !rid.split('.').any(str::is_empty)
                && match kind {
                    EventKind::Submitted | EventKind::CancelRequested => tokens == 2,
                    _ => tokens <= 2,
                };
            well_formed.then_some((kind, rid))
        })
    }

    /// Events that happen at most once per request. The stream itself refuses a second one
    /// (each is published expecting no earlier message on its subject), so a service redoing
    /// work after a crash, or two services racing, can never store two of them.
    pub fn once_per_request(self) -> bool {
        matches!(
            self,
            EventKind::Submitted
                | EventKind::Assessed
                | EventKind::OverrideAsked
                | EventKind::Decided
                | EventKind::ExecStarted
                | EventKind::Terminal
        )
    }

    /// True for the events that end a request.
    pub fn is_terminal(self) -> bool {
        self == EventKind::Terminal
    }
}

impl std::str::FromStr for EventKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        EventKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown event kind {s:?}"))
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Event {
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Submitted(_) => EventKind::Submitted,
            Event::Assessed(_) => EventKind::Assessed,
            Event::OverrideAsked(_) => EventKind::OverrideAsked,
            Event::OverrideAnswered(_) => EventKind::OverrideAnswered,
            Event::Decided(_) => EventKind::Decided,
            Event::ExecStarted(_) => EventKind::ExecStarted,
            Event::Output(_) => EventKind::Output,
            Event::Usage(_) => EventKind::Usage,
            Event::Activity(_) => EventKind::Activity,
            Event::Observed(_) => EventKind::Observed,
            Event::Egress(_) => EventKind::Egress,
            Event::Terminal(_) => EventKind::Terminal,
            Event::Refused(_) => EventKind::Refused,
            Event::ApprovalRevoked(_) => EventKind::ApprovalRevoked,
            Event::Progress(_) => EventKind::Progress,
            Event::CancelRequested(_) => EventKind::CancelRequested,
            Event::ChatRefused(_) => EventKind::ChatRefused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_round_trip() {
        let rid = RequestId::parse("mai.r1").unwrap();
        for kind in EventKind::ALL {
            let subject = kind.subject(&rid);
            assert_eq!(EventKind::parse_subject(&subject), Some((kind, "mai.r1")), "{subject}");
            assert_eq!(kind.as_str().parse::<EventKind>(), Ok(kind));
        }
        assert_eq!(
            EventKind::parse_subject("airlock.submit.other.r1"),
            Some((EventKind::Submitted, "other.r1"))
        );
        assert_eq!(
            EventKind::parse_subject("airlock.terminal.r1"),
            Some((EventKind::Terminal, "r1"))
        );
        // A submission names its client; no subject holds more than a client and an id.
        assert_eq!(EventKind::parse_subject("airlock.submit.r1"), None);
        assert_eq!(EventKind::parse_subject("airlock.terminal.a.b.c"), None);
        assert_eq!(EventKind::parse_subject("airlock.terminal.a..b"), None);
        assert_eq!(EventKind::parse_subject("airlock.exec.output."), None);
        assert_eq!(EventKind::parse_subject("airlock.audit.entry.r1"), None);
        assert_eq!(EventKind::parse_subject("nope"), None);
    }
}
