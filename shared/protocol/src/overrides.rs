//! Asking a human, and a human's answer.

use crate::assessment::{Finding, Level};
use crate::ids::{CodeDigest, RequestId};
use crate::request::{Language, Origin};
use crate::signed::Signed;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Domain string of override-answer signatures.
pub const ANSWER_DOMAIN: &str = "airlock/override-answer/v1";

/// Published by the gate for a chat bridge to show a human.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OverrideAsked {
    pub level: Level,
    /// Why a human is asked, built from the findings.
    pub explanation: String,
    pub findings: Vec<Finding>,
    pub code_digest: CodeDigest,
    pub language: Language,
    pub origin: Origin,
    /// The first lines of the code, for display.
    pub code_preview: String,
    /// Arguments, environment, packages and stdin, one line each, for display: they change
    /// what the code does, so the approver sees them with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// An answer after this instant is too late: the request is denied.
    pub deadline_ms: i64,
}

/// What an approver signs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OverrideAnswer {
    pub request_id: RequestId,
    /// The digest shown to the human; an answer is valid only for exactly that code.
    pub code_digest: CodeDigest,
    pub approve: bool,
    pub reason: String,
    pub who: String,
    pub answered_at_ms: i64,
}

/// The `override_answered` event: an answer signed by an approver key the gate trusts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OverrideAnswered {
    pub signed: Signed,
}
