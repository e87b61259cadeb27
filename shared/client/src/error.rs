//! What can go wrong for a client, typed: the stack is not there, the request was refused,
//! waiting ran out, the receipt does not hold, an override answer was not taken.

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no stack is running in {home}; start one with `airlock up`")]
    NotRunning { home: String },
    #[error("the stack in {home} is not running (stale stack.json); start it with `airlock up`")]
    Stale { home: String },
    #[error("cannot tell where the stack is: set AIRLOCK_HOME")]
    NoHome,
    #[error("reading {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("writing {path}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is unreadable")]
    Corrupt {
        path: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("cannot reach NATS at {url} as {user}")]
    Unreachable { url: String, user: String },
    #[error(transparent)]
    Bus(#[from] airlock_bus::BusError),
    #[error("the request is invalid")]
    Invalid(#[from] airlock_protocol::RequestError),
    #[error("submitting the request")]
    Submit(#[source] airlock_bus::PublishError),
    #[error("the cancellation is invalid")]
    InvalidCancel(#[from] airlock_protocol::cancel::CancelError),
    #[error("sending the cancellation")]
    Cancel(#[source] airlock_bus::PublishError),
    #[error("request id")]
    RequestId(#[from] airlock_protocol::IdError),
    #[error("request id {request_id} belongs to client {owner}; this client is {user}")]
    ForeignRequestId {
        request_id: String,
        owner: String,
        user: String,
    },
    #[error("no result for {request_id} after {waited:?} (it may still finish)")]
    TimedOut {
        request_id: String,
        waited: std::time::Duration,
    },
    #[error("the connection to NATS closed while waiting for {request_id}")]
    Closed { request_id: String },
    #[error("NATS: {what}")]
    Nats {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("the result carries no audit receipt")]
    NoReceipt,
    #[error("the auditor's keys")]
    AuditorKeys(#[source] airlock_auditlog::trust::KeySetError),
    #[error("the audit receipt does not hold")]
    Receipt(#[source] crate::result::ReceiptError),
    #[error("the override-gate did not answer within {waited:?}")]
    GateSilent { waited: std::time::Duration },
    #[error("unreadable reply from the override-gate: {reply}")]
    GateReply {
        reply: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the override-gate refused: {detail}")]
    GateRefused { detail: String },
    #[error("an override answer needs a reason: it is recorded in the decision and the audit log")]
    EmptyReason,
    #[error("an override answer needs the name of who answers")]
    EmptyWho,
    #[error("{name:?} is not an operator's name (lowercase letters, digits, `-`, `_` and `.`, starting with a letter)")]
    BadOperatorName { name: String },
    #[error("answers signed with {operator}'s own key are {operator}'s; they cannot say they are {who:?}")]
    NotTheKeysPerson { operator: String, who: String },
    #[error("{request_id} is not waiting for a decision (`airlock override list`)")]
    NotPending { request_id: String },
    #[error("sending the override answer")]
    Answer(#[source] airlock_bus::PublishError),
    #[error("{request_id}: the gate refused the answer: {detail}")]
    AnswerRefused { request_id: String, detail: String },
    #[error("{request_id}: answer sent, but the gate has not confirmed it after {waited:?}")]
    Unconfirmed {
        request_id: String,
        waited: std::time::Duration,
    },
    #[error("signing key {path}")]
    Key {
        path: String,
        #[source]
        source: airlock_protocol::KeyError,
    },
}

impl ClientError {
    pub(crate) fn nats(what: &'static str, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        ClientError::Nats {
            what,
            source: Box::new(source),
        }
    }
}
