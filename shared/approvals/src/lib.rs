//! Whether a human's answer to an override request counts: who may answer which level from
//! which chat, the person behind an identity (`[people]`), the reason, the exact execution the
//! human was shown, the deadline, the "approve again" bound and the two-person rule. One
//! judgement, free of I/O, used by the override-gate (which alone decides, against the policy in
//! force) and by the chat bridge (which tells a human at once what will become of their answer,
//! judged against the policy the gate sent with the request).

pub mod judgement;
pub mod people;

pub use judgement::{AnswerPolicy, Approval, Asked, Judge, Judgement, Source, Verdict};
pub use people::{People, PeopleError, Person, valid_person_name};

/// The chat systems a bridge can relay from; `[gate.bridge_keys]`, `[gate.policy.approvers]`,
/// `[gate.policy.escalation]` and `[people.*]` are keyed by these names.
pub const CHAT_SYSTEMS: [&str; 4] = ["matrix", "slack", "discord", "webhook"];
