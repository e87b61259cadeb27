//! Submitting a request and following it: output as it happens, then its one terminal event and
//! its audit receipt. Subscriptions are made before the submission, so nothing can slip past;
//! and since a live subscription misses what is published while the connection is down, the
//! streams themselves are read too (direct get by subject), so a result is never missed for good.

use crate::{Client, ClientError, RunResult};
use airlock_bus::Publisher;
use airlock_protocol::digest::request_digest;
use airlock_protocol::execution::OutputChunk;
use airlock_protocol::subjects::{AUDIT_STREAM, EVENTS_STREAM, audit_receipt_subject, submit_subject};
use airlock_protocol::{
    AuditReceipt, CodeDigest, Envelope, Event, EventKind, ExecutionRequest, Language, Origin, Producer, Progress,
    RequestId, Terminal, TrustLevel,
};
use futures::StreamExt as _;
use std::collections::BTreeMap;
use std::time::Duration;

/// How often a waiting client reads the terminal event from the stream.
const STREAM_CHECK_EVERY: Duration = Duration::from_secs(2);
/// How long the audit receipt is waited for after the result (it follows within milliseconds
/// while the auditor is up).
pub const RECEIPT_WAIT: Duration = Duration::from_secs(15);
/// How long `run` waits for a result by default (a human may have to answer first).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(3600);

/// What to run, with everything Mai may say about it.
#[derive(Clone, Debug)]
pub struct Submission {
    pub request: ExecutionRequest,
    /// The request's id (default: a fresh one).
    pub request_id: Option<RequestId>,
}

impl Submission {
    pub fn new(language: Language, code: impl Into<Vec<u8>>) -> Self {
        Self {
            request: ExecutionRequest::new(language, code),
            request_id: None,
        }
    }

    pub fn python(code: impl Into<Vec<u8>>) -> Self {
        Self::new(Language::Python, code)
    }

    pub fn bash(code: impl Into<Vec<u8>>) -> Self {
        Self::new(Language::Bash, code)
    }

    pub fn origin(mut self, origin: Origin) -> Self {
        self.request.origin = origin;
        self
    }

    pub fn trust(mut self, trust: TrustLevel) -> Self {
        self.request.trust = trust;
        self
    }

    /// The network asked for (`read-only`: GET/HEAD to allow-listed hosts, if the gate grants it).
    pub fn network(mut self, network: airlock_protocol::NetworkMode) -> Self {
        self.request.network = network;
        self
    }

    pub fn args(mut self, args: Vec<String>) -> Self {
        self.request.inputs.args = args;
        self
    }

    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.request.inputs.env = env;
        self
    }

    pub fn stdin(mut self, stdin: Vec<u8>) -> Self {
        self.request.inputs.stdin = stdin;
        self
    }

    /// Files placed read-only in the program's working directory (see `airlock_protocol::files`).
    pub fn files(mut self, files: Vec<airlock_protocol::InputFile>) -> Self {
        self.request.inputs.files = files;
        self
    }

    pub fn packages(mut self, packages: Vec<String>) -> Self {
        self.request.packages = packages;
        self
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.request.label = Some(label.into());
        self
    }

    pub fn id(mut self, request_id: RequestId) -> Self {
        self.request_id = Some(request_id);
        self
    }
}

/// What [`Request::on_progress`] calls.
type ProgressCallback = Box<dyn FnMut(&Progress) + Send + Sync>;

/// A submitted request.
pub struct Request {
    id: RequestId,
    js: async_nats::jetstream::Context,
    terminals: async_nats::Subscriber,
    receipts: async_nats::Subscriber,
    outputs: async_nats::Subscriber,
    progress: async_nats::Subscriber,
    /// Called with each stage the request reaches, as it is seen.
    on_progress: Option<ProgressCallback>,
    /// The stages seen so far, in order.
    stages: Vec<Progress>,
    terminal: Option<Terminal>,
    /// The request digest of what was submitted (its code, inputs and client); None for a
    /// request followed with `attach`, whose code this client does not hold.
    request_digest: Option<CodeDigest>,
}

impl Client {
    /// Submits as this client and returns at once; follow the request with the handle.
    pub async fn submit(&self, submission: Submission) -> Result<Request, ClientError> {
        submission.request.validate()?;
        let id = self.request_id(submission.request_id)?;
        // Subscribed before the submission, so nothing about it can slip past.
        let mut request = self.follow(id).await?;
        // Known only to the submitter: a receipt's check then covers the code that ran. A request
        // naming packages is digested over the wheels they resolve to, which only the assessor
        // learns: its receipt's check covers the decision and the result, not the code.
        if submission.request.packages.is_empty() {
            request.request_digest = Some(request_digest(&submission.request, request.id.client(), &[]));
        }
        let envelope = Envelope::new(request.id.clone(), Producer::Mai, Event::Submitted(submission.request));
        let payload = envelope.encode().map_err(|e| ClientError::Submit(e.into()))?;
        Publisher::new(
            request.js.clone(),
            Producer::Mai,
            tokio_util::sync::CancellationToken::new(),
        )
        .with_patience(Duration::from_secs(30))
        .submit(submit_subject(&request.id), payload.into(), envelope.dedup_id())
        .await
        .map_err(ClientError::Submit)?;
        Ok(request)
    }

    /// Follows a request submitted earlier (by this process or another, such as an MCP call
    /// being looked up again): its last stage and, when it has ended, its terminal event are
    /// read back from the stream.
    pub async fn attach(&self, id: RequestId) -> Result<Request, ClientError> {
        let mut request = self.follow(id).await?;
        request.terminal = terminal_in_stream(&request.js, &request.id).await;
        if let Some(progress) = last_progress_in_stream(&request.js, &request.id).await {
            request.stages.push(progress);
        }
        Ok(request)
    }

    /// Subscriptions to everything about request `id`, in place on the server when this
    /// returns.
    async fn follow(&self, id: RequestId) -> Result<Request, ClientError> {
        let subscribe = |subject: String| async move {
            self.nats
                .subscribe(subject)
                .await
                .map_err(|e| ClientError::nats("subscribing to the result", e))
        };
        let terminals = subscribe(EventKind::Terminal.subject(&id)).await?;
        let receipts = subscribe(audit_receipt_subject(id.as_str())).await?;
        let outputs = subscribe(EventKind::Output.subject(&id)).await?;
        let progress = subscribe(EventKind::Progress.subject(&id)).await?;
        self.nats
            .flush()
            .await
            .map_err(|e| ClientError::nats("subscribing to the result", e))?;
        Ok(Request {
            id,
            js: async_nats::jetstream::new(self.nats.clone()),
            terminals,
            receipts,
            outputs,
            progress,
            on_progress: None,
            stages: Vec::new(),
            terminal: None,
            request_digest: None,
        })
    }

    /// The id a submission goes under: this client's name and the id it chose (a fresh one
    /// when it chose none). An id naming another client is refused here, as the server would.
    fn request_id(&self, chosen: Option<RequestId>) -> Result<RequestId, ClientError> {
        let Some(id) = chosen else {
            return Ok(RequestId::new_for(&self.user)?);
        };
        match id.client() {
            None => Ok(RequestId::for_client(&self.user, id.local())?),
            Some(owner) if owner == self.user => Ok(id),
            Some(owner) => Err(ClientError::ForeignRequestId {
                request_id: id.to_string(),
                owner: owner.to_owned(),
                user: self.user.clone(),
            }),
        }
    }

    /// Submits, waits for the result (up to an hour: a human may have to answer) and its
    /// receipt.
    pub async fn run(&self, submission: Submission) -> Result<RunResult, ClientError> {
        self.submit(submission).await?.result(DEFAULT_WAIT, true).await
    }

    /// Asks for request `id` (this client's own) to be stopped, for `reason`: the gate withdraws
    /// it while it is assessed or waits for a human, the executor kills it while it waits for
    /// its turn or runs; it then ends `cancelled`. Returns once the cancellation is stored (and
    /// so audited); a request that has already ended stays as it ended.
    pub async fn cancel(&self, id: &RequestId, reason: &str) -> Result<(), ClientError> {
        let id = self.request_id(Some(id.clone()))?;
        let cancel = airlock_protocol::CancelRequest::new(reason);
        cancel.check()?;
        let envelope = Envelope::new(id.clone(), Producer::Mai, Event::CancelRequested(cancel));
        let payload = envelope.encode().map_err(|e| ClientError::Cancel(e.into()))?;
        Publisher::new(
            async_nats::jetstream::new(self.nats.clone()),
            Producer::Mai,
            tokio_util::sync::CancellationToken::new(),
        )
        .with_patience(Duration::from_secs(30))
        .submit(
            airlock_protocol::EventKind::CancelRequested.subject(&id),
            payload.into(),
            envelope.dedup_id(),
        )
        .await
        .map_err(ClientError::Cancel)?;
        Ok(())
    }
}

impl Request {
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The request digest of what was submitted (None when attached): the receipt's check
    /// compares it with the logged approval.
    pub fn request_digest(&self) -> Option<&CodeDigest> {
        self.request_digest.as_ref()
    }

    /// A result of this request from its terminal event (and the receipt, if there is one yet).
    pub fn result_from(&self, terminal: Terminal) -> RunResult {
        RunResult {
            request_digest: self.request_digest.clone(),
            ..RunResult::new(self.id.clone(), terminal)
        }
    }

    /// Calls `callback` with each stage the request reaches (assessed, waiting for a human,
    /// approved, queued, running, ...) while the request is waited for.
    pub fn on_progress(&mut self, callback: impl FnMut(&Progress) + Send + Sync + 'static) {
        self.on_progress = Some(Box::new(callback));
    }

    /// The stages seen so far, in order (the last is where the request is).
    pub fn stages(&self) -> &[Progress] {
        &self.stages
    }

    fn saw_progress(&mut self, message: Option<async_nats::Message>) {
        let Some(message) = message else { return };
        if let Ok(Envelope {
            event: Event::Progress(progress),
            ..
        }) = Envelope::decode_on(message.subject.as_str(), &message.payload)
        {
            if let Some(callback) = self.on_progress.as_mut() {
                callback(&progress);
            }
            self.stages.push(progress);
        }
    }

    /// The next chunk of output as it happens; `None` once the request has ended and every
    /// chunk that arrived before its end was handed out.
    pub async fn next_output(&mut self) -> Option<OutputChunk> {
        loop {
            if self.terminal.is_some() {
                // The end is known: only what is already there.
                let message = futures::FutureExt::now_or_never(self.outputs.next()).flatten()?;
                if let Some(chunk) = decode_output(&message) {
                    return Some(chunk);
                }
                continue;
            }
            tokio::select! {
                biased;
                message = self.outputs.next() => {
                    if let Some(chunk) = message.as_ref().and_then(decode_output) {
                        return Some(chunk);
                    }
                }
                message = self.progress.next() => self.saw_progress(message),
                message = self.terminals.next() => match message.as_ref().and_then(decode_terminal) {
                    Some(terminal) => self.terminal = Some(terminal),
                    None if message.is_none() => return None,
                    None => {}
                },
                _ = tokio::time::sleep(STREAM_CHECK_EVERY) => {
                    self.terminal = terminal_in_stream(&self.js, &self.id).await;
                }
            }
        }
    }

    /// The request's terminal event, waiting at most `wait`.
    pub async fn terminal(&mut self, wait: Duration) -> Result<Terminal, ClientError> {
        if let Some(terminal) = &self.terminal {
            return Ok(terminal.clone());
        }
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let next = async {
                loop {
                    tokio::select! {
                        biased;
                        message = self.terminals.next() => return message,
                        message = self.progress.next() => self.saw_progress(message),
                    }
                }
            };
            let next = tokio::time::timeout(STREAM_CHECK_EVERY, next);
            match tokio::time::timeout_at(deadline, next).await {
                Err(_) => {
                    return Err(ClientError::TimedOut {
                        request_id: self.id.to_string(),
                        waited: wait,
                    });
                }
                Ok(Err(_)) => {
                    if let Some(terminal) = terminal_in_stream(&self.js, &self.id).await {
                        self.terminal = Some(terminal.clone());
                        return Ok(terminal);
                    }
                }
                Ok(Ok(None)) => {
                    return Err(ClientError::Closed {
                        request_id: self.id.to_string(),
                    });
                }
                Ok(Ok(Some(message))) => {
                    if let Some(terminal) = decode_terminal(&message) {
                        self.terminal = Some(terminal.clone());
                        return Ok(terminal);
                    }
                }
            }
        }
    }

    /// The request's audit receipt: from the subscription, or from the audit stream when it
    /// was published while the subscription could not see it. `None` after `wait`.
    pub async fn receipt(&mut self, wait: Duration) -> Option<AuditReceipt> {
        let deadline = tokio::time::Instant::now() + wait;
        let subject = audit_receipt_subject(self.id.as_str());
        loop {
            let next = tokio::time::timeout(Duration::from_millis(500), self.receipts.next());
            match tokio::time::timeout_at(deadline, next).await {
                Err(_) | Ok(Ok(None)) => return None,
                Ok(Ok(Some(message))) => return AuditReceipt::decode(&message.payload).ok(),
                Ok(Err(_)) => {
                    if let Ok(stream) = self.js.get_stream_no_info(AUDIT_STREAM).await
                        && let Ok(message) = stream.direct_get_last_for_subject(subject.clone()).await
                    {
                        return AuditReceipt::decode(&message.payload).ok();
                    }
                }
            }
        }
    }

    /// Waits for the terminal event (at most `wait`) and, when asked, for the receipt; a
    /// receipt that does not come in time leaves the result saying why
    /// ([`RunResult::receipt_missing`]).
    pub async fn result(mut self, wait: Duration, with_receipt: bool) -> Result<RunResult, ClientError> {
        let terminal = self.terminal(wait).await?;
        let mut result = self.result_from(terminal);
        self.fetch_observed(&mut result).await;
        if with_receipt {
            self.fetch_receipt(&mut result, RECEIPT_WAIT).await;
        }
        Ok(result)
    }

    /// Reads the kernel's record of the run from the stream into `result` (published before the
    /// terminal event, so it is there once the terminal event is; absent when the code never ran).
    pub async fn fetch_observed(&self, result: &mut RunResult) {
        let subject = EventKind::Observed.subject(&self.id);
        let Ok(stream) = self.js.get_stream_no_info(EVENTS_STREAM).await else {
            return;
        };
        let Ok(message) = stream.direct_get_last_for_subject(subject.clone()).await else {
            return;
        };
        if let Ok(Envelope {
            event: Event::Observed(observed),
            ..
        }) = Envelope::decode_on(&subject, &message.payload)
        {
            result.observed = Some(*observed);
        }
    }

    /// Waits at most `wait` for the receipt and puts it in `result`, or says in
    /// `result.receipt_missing` why there is none and how to fetch it later.
    pub async fn fetch_receipt(&mut self, result: &mut RunResult, wait: Duration) {
        result.receipt = self.receipt(wait).await;
        result.receipt_missing = match result.receipt {
            Some(_) => None,
            None => Some(missing_receipt(&self.id, wait)),
        };
    }
}

/// Why a receipt did not come, and how to get it once it exists.
pub fn missing_receipt(request_id: &RequestId, waited: Duration) -> String {
    format!(
        "no audit receipt within {} s: the auditor is stopped, behind or cannot write its store (`airlock status` says which); \
         the result stands, and once the auditor catches up the receipt can be fetched with \
         `airlock audit prove request {request_id}` (the receipt also stays on airlock.audit.receipt.{request_id})",
        waited.as_secs()
    )
}

fn decode_terminal(message: &async_nats::Message) -> Option<Terminal> {
    match Envelope::decode_on(message.subject.as_str(), &message.payload) {
        Ok(Envelope {
            event: Event::Terminal(terminal),
            ..
        }) => Some(*terminal),
        _ => None,
    }
}

fn decode_output(message: &async_nats::Message) -> Option<OutputChunk> {
    match Envelope::decode_on(message.subject.as_str(), &message.payload) {
        Ok(Envelope {
            event: Event::Output(chunk),
            ..
        }) => Some(chunk),
        _ => None,
    }
}

/// The request's latest stage, read from the events stream (direct get by subject).
async fn last_progress_in_stream(js: &async_nats::jetstream::Context, request_id: &RequestId) -> Option<Progress> {
    let subject = EventKind::Progress.subject(request_id);
    let stream = js.get_stream_no_info(EVENTS_STREAM).await.ok()?;
    let message = stream.direct_get_last_for_subject(subject.clone()).await.ok()?;
    match Envelope::decode_on(&subject, &message.payload) {
        Ok(Envelope {
            event: Event::Progress(progress),
            ..
        }) => Some(progress),
        _ => None,
    }
}

/// The request's terminal event, read from the events stream (direct get by subject).
async fn terminal_in_stream(js: &async_nats::jetstream::Context, request_id: &RequestId) -> Option<Terminal> {
    let subject = EventKind::Terminal.subject(request_id);
    let stream = js.get_stream_no_info(EVENTS_STREAM).await.ok()?;
    let message = stream.direct_get_last_for_subject(subject.clone()).await.ok()?;
    match Envelope::decode_on(&subject, &message.payload) {
        Ok(Envelope {
            event: Event::Terminal(terminal),
            ..
        }) => Some(*terminal),
        _ => None,
    }
}
