//! Airlock's wire contract.
//!
//! Every message on the bus is an [`Envelope`] encoded as MessagePack (named fields), carrying one
//! [`Event`]. The subject a message travels on is derived from its event kind and request id
//! ([`subjects`]), and a decoder refuses a message whose body does not match its subject, so that
//! NATS subject permissions also bound which kinds of event each user can produce.

pub mod assessment;
pub mod audit;
pub mod cancel;
pub mod decision;
pub mod digest;
pub mod envelope;
pub mod event;
pub mod execution;
pub mod files;
pub mod hosts;
pub mod ids;
pub mod keys;
pub mod observed;
pub mod overrides;
pub mod packages;
pub mod progress;
pub mod refusal;
pub mod request;
pub mod roles;
pub mod schema;
pub mod signed;
pub mod source;
pub mod subjects;
pub mod text;

pub use assessment::{Assessment, Category, Confidence, Finding, Level, ParseStatus};
pub use audit::AuditReceipt;
pub use cancel::CancelRequest;
pub use decision::{Approver, Decided, Decision, DecisionOutcome, DecisionSummary, Limits, Quotas};
pub use digest::{Grant, NetworkMode, Runtime};
pub use envelope::{Envelope, MAX_MESSAGE_BYTES, Producer, SCHEMA_VERSION, WireError};
pub use event::{Event, EventKind};
pub use execution::{
    Activity, Egress, ExecStarted, Outcome, OutputChunk, OutputStream, Terminal, Usage, UsageSample, Violation,
    ViolationKind,
};
pub use files::{InputFile, OutputFile};
pub use hosts::DEFAULT_READ_ONLY_HOSTS;
pub use ids::{CodeDigest, IdError, MessageId, RequestId, now_ms};
pub use keys::{KeyError, SigningKey, VerifierKey, VerifierSet};
pub use observed::{Observed, ObservedAttempt, ObservedFile, ObservedNetwork, ObservedProcess};
pub use overrides::{
    ApprovalRevoked, ChatRefused, EarlierDecision, EarlierRelation, EarlierRequest, MAX_EARLIER_DIFF_BYTES,
    OverrideAnswer, OverrideAnswered, OverrideAsked, PendingOverride, RememberedApproval, RevokeRemembered,
};
pub use packages::{PackageFinding, PackageRating, ResolveFailure, ResolveReply, ResolveRequest, Wheel};
pub use progress::Progress;
pub use refusal::{Refusal, RefusalReason, error_chain};
pub use request::{
    ExecutionRequest, Inputs, Language, MAX_CODE_BYTES, Origin, RequestError, RequestedLimits, TrustLevel,
};
pub use signed::{SignatureError, Signed};
pub use source::{Codec, Cookie, SourceEncoding, SourceRefusal, Undecodable, python_source_encoding};
