//! The tools `airlock mcp` offers: run Python or bash, follow a run that is still going, check a
//! receipt. Each run is an ordinary Airlock request of the MCP server's own client user:
//! assessed, decided (a human may be asked), run in a fresh sandbox, audited.
//!
//! A tool's arguments carry the same fields, under the same names, as the Python client's
//! `Submission` (code, args, env, stdin, packages, origin, trust, label), so an assistant moving
//! between the two meets one vocabulary.

use airlock_client::{Client, Request, RunResult, Submission};
use airlock_protocol::text::visible_line;
use airlock_protocol::{InputFile, Language, Origin, Outcome, OutputFile, Progress, RequestId, TrustLevel};
use base64::Engine as _;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, ProgressToken, RequestMetaObject,
    ServerCapabilities, ServerConfig,
};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// What the server says about itself to an MCP client.
const INSTRUCTIONS: &str = "Runs code in Airlock's sandbox: each run is assessed, may wait for a \
human's approval, runs in a fresh container with no network, and is recorded in a signed audit \
log. `run_python` and `run_bash` return the output and the request id, take `files` (placed \
read-only in the working directory) and return what the program writes under `out/` (pictures \
as images); when a run is still going (waiting for a human, say) call `get_result` with its id \
later. `check_receipt` proves a run is in the audit log.";

/// The longest a tool call waits for a run before answering "still going" (an MCP client may
/// give up on a call that takes longer; `get_result` picks it up again).
pub const MAX_WAIT: Duration = Duration::from_secs(600);

/// `run_python` / `run_bash`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The program's source.
    pub code: String,
    /// Arguments after the program name (`sys.argv[1:]`, `$@`).
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables (those that change how an interpreter starts are refused).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Text on the program's standard input.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Python packages to install first, `NAME` or `NAME==VERSION` (from the operator's index).
    #[serde(default)]
    pub packages: Vec<String>,
    /// Text files placed read-only in the program's working directory, by relative path
    /// (`{"data.csv": "a,b\n1,2\n"}`). Files the program writes under `out/` come back.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Binary files, as base64, placed like `files`.
    #[serde(default)]
    pub files_base64: BTreeMap<String, String>,
    /// `generated` (you wrote it; the default) or `external` (fetched or pasted: rated more
    /// strictly).
    #[serde(default)]
    pub origin: Option<OriginArg>,
    /// The quota asked for: `untrusted`, `unknown` (the default) or `trusted`.
    #[serde(default)]
    pub trust: Option<TrustArg>,
    /// `read-only` to fetch web pages (GET/HEAD to the operator's allow-listed hosts, through
    /// Airlock's proxy), if the gate grants it; `none` (the default): no network at all.
    #[serde(default)]
    pub network: Option<NetworkArg>,
    /// A label shown to the human who may be asked to approve, such as a file name.
    #[serde(default)]
    pub label: Option<String>,
    /// Seconds to wait for the result before answering with the run's status (it goes on).
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OriginArg {
    Generated,
    External,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkArg {
    None,
    ReadOnly,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrustArg {
    Untrusted,
    Unknown,
    Trusted,
}

/// `get_result`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultArgs {
    /// The id a run tool returned (`mcp.<uuid>`).
    pub request_id: String,
    /// Seconds to wait for the end.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// `check_receipt`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiptArgs {
    /// The id a run tool returned.
    pub request_id: String,
}

/// `cancel_run`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelArgs {
    /// The id a run tool returned.
    pub request_id: String,
    /// Why (recorded with the run's end and in the audit log).
    pub reason: String,
}

/// The MCP server's tools over one Airlock client connection.
#[derive(Clone)]
pub struct AirlockTools {
    client: Client,
    default_wait: Duration,
    #[expect(dead_code, reason = "the tool_handler macro reads the router")]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl AirlockTools {
    pub fn new(client: Client, default_wait: Duration) -> Self {
        Self {
            client,
            default_wait: default_wait.min(MAX_WAIT),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Run a Python 3.11 program in Airlock's sandbox (no network; packages from the operator's index). Returns its output, exit code and request id; a run that must wait for a human's approval may answer 'still going': call get_result later."
    )]
    async fn run_python(
        &self,
        Parameters(args): Parameters<RunArgs>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(Language::Python, args, meta.get_progress_token(), peer).await
    }

    #[tool(
        description = "Run a bash script in Airlock's sandbox (no network). Returns its output, exit code and request id; a run that must wait for a human's approval may answer 'still going': call get_result later."
    )]
    async fn run_bash(
        &self,
        Parameters(args): Parameters<RunArgs>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(Language::Bash, args, meta.get_progress_token(), peer).await
    }

    #[tool(
        description = "Wait for a run started earlier and return its result (or where it is, if it is still going)."
    )]
    async fn get_result(
        &self,
        Parameters(args): Parameters<ResultArgs>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = match self.own_request(&args.request_id) {
            Ok(id) => id,
            Err(refusal) => return Ok(refusal),
        };
        let request = self.client.attach(id).await.map_err(internal)?;
        let wait = self.wait(args.wait_seconds);
        self.finish(request, wait, meta.get_progress_token(), peer).await
    }

    #[tool(
        description = "Stop a run started earlier, whether it waits for a human's approval, waits for its turn or runs: it ends 'cancelled', with the output it wrote until then. A run that already ended stays as it ended."
    )]
    async fn cancel_run(&self, Parameters(args): Parameters<CancelArgs>) -> Result<CallToolResult, ErrorData> {
        let id = match self.own_request(&args.request_id) {
            Ok(id) => id,
            Err(refusal) => return Ok(refusal),
        };
        // Followed before the cancellation goes out, so that its end cannot slip past.
        let mut request = self.client.attach(id.clone()).await.map_err(internal)?;
        if let Err(error) = self.client.cancel(&id, &args.reason).await {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "{id} was not cancelled: {}",
                airlock_protocol::refusal::error_chain(&error)
            ))]));
        }
        match request.terminal(Duration::from_secs(30)).await {
            Ok(terminal) if terminal.outcome == airlock_protocol::Outcome::Cancelled => {
                // What was asked for happened: the run's end, told as any result is, is no error.
                let mut answer = result_content(&request.result_from(terminal));
                answer.is_error = Some(false);
                Ok(answer)
            }
            Ok(terminal) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "{id} had already ended ({}); the cancellation changed nothing",
                terminal.outcome.as_str()
            ))])),
            Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "the cancellation of {id} was sent, but its end was not seen: {}",
                airlock_protocol::refusal::error_chain(&error)
            ))])),
        }
    }

    #[tool(
        description = "Check a run's audit receipt: that its result is recorded in Airlock's signed, append-only audit log (verified against the auditor's key)."
    )]
    async fn check_receipt(&self, Parameters(args): Parameters<ReceiptArgs>) -> Result<CallToolResult, ErrorData> {
        let id = match self.own_request(&args.request_id) {
            Ok(id) => id,
            Err(refusal) => return Ok(refusal),
        };
        let mut request = self.client.attach(id.clone()).await.map_err(internal)?;
        let terminal = match request.terminal(Duration::from_secs(2)).await {
            Ok(terminal) => terminal,
            Err(_) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "{id} has not ended yet: there is no receipt until it has"
                ))]));
            }
        };
        let mut result = request.result_from(terminal);
        request
            .fetch_receipt(&mut result, airlock_client::request::RECEIPT_WAIT)
            .await;
        let mut answer = match self.client.verify_receipt(&result) {
            Ok(_) => {
                let receipt = result.receipt.as_ref();
                let entries = receipt.map(|r| r.entries.clone()).unwrap_or_default();
                let checkpoint = receipt.map(|r| r.checkpoint.clone()).unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(format!(
                    "verified: {id} ({}) is in the audit log as entries {entries:?}, proven included in this \
                     checkpoint signed by the auditor:\n{checkpoint}",
                    result.terminal.outcome.as_str()
                ))])
            }
            Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the receipt of {id} does not verify: {}",
                airlock_protocol::refusal::error_chain(&error)
            ))]),
        };
        answer.structured_content = Some(serde_json::json!({
            "request_id": id,
            "verified": answer.is_error != Some(true),
            "audit": result.receipt.as_ref().map(|r| r.entries.clone()).unwrap_or_default(),
            "checkpoint": result.receipt.as_ref().map(|r| r.checkpoint.clone()),
        }));
        Ok(answer)
    }
}

impl AirlockTools {
    async fn run(
        &self,
        language: Language,
        args: RunArgs,
        progress_token: Option<ProgressToken>,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let wait = self.wait(args.wait_seconds);
        let mut files: Vec<InputFile> = args
            .files
            .into_iter()
            .map(|(name, text)| InputFile::new(name, text.into_bytes()))
            .collect();
        for (name, encoded) in args.files_base64 {
            match base64::engine::general_purpose::STANDARD.decode(encoded.as_bytes()) {
                Ok(content) => files.push(InputFile::new(name, content)),
                Err(error) => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "the request is invalid: files_base64[{name:?}] is not base64: {error}"
                    ))]));
                }
            }
        }
        let mut submission = Submission::new(language, args.code.into_bytes())
            .files(files)
            .origin(match args.origin {
                Some(OriginArg::External) => Origin::External,
                _ => Origin::Generated,
            })
            .trust(match args.trust {
                Some(TrustArg::Untrusted) => TrustLevel::Untrusted,
                Some(TrustArg::Trusted) => TrustLevel::Trusted,
                _ => TrustLevel::Unknown,
            })
            .network(match args.network {
                Some(NetworkArg::ReadOnly) => airlock_protocol::NetworkMode::ReadOnly,
                _ => airlock_protocol::NetworkMode::None,
            })
            .args(args.args)
            .env(args.env)
            .stdin(args.stdin.unwrap_or_default().into_bytes())
            .packages(args.packages);
        if let Some(label) = args.label {
            submission = submission.label(label);
        }
        let request = match self.client.submit(submission).await {
            Ok(request) => request,
            // The request itself is wrong: say so to the caller, who can fix it.
            Err(airlock_client::ClientError::Invalid(error)) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "the request is invalid: {error}"
                ))]));
            }
            Err(error) => return Err(internal(error)),
        };
        self.finish(request, wait, progress_token, peer).await
    }

    /// Waits for `request` to end (at most `wait`), telling the MCP client each stage as a
    /// progress notification when it asked for them, then answers with the result or with where
    /// the request is.
    async fn finish(
        &self,
        mut request: Request,
        wait: Duration,
        progress_token: Option<ProgressToken>,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let (stages, mut seen) = tokio::sync::mpsc::unbounded_channel::<Progress>();
        request.on_progress(move |stage| {
            let _ = stages.send(stage.clone());
        });
        let notify = async move {
            let mut step = 0.0;
            while let Some(stage) = seen.recv().await {
                if let Some(token) = &progress_token {
                    step += 1.0;
                    let note = ProgressNotificationParam::new(token.clone(), step).with_message(stage.describe());
                    let _ = peer.notify_progress(note).await;
                }
            }
        };
        let notifier = tokio::spawn(notify);
        let id = request.id().clone();
        let ended = request.terminal(wait).await;
        let answer = match ended {
            Ok(terminal) => {
                let mut result = request.result_from(terminal);
                request
                    .fetch_receipt(&mut result, airlock_client::request::RECEIPT_WAIT)
                    .await;
                Ok(result_content(&result))
            }
            Err(airlock_client::ClientError::TimedOut { .. }) => Ok(still_going(&id, request.stages().last())),
            Err(error) => Err(internal(error)),
        };
        drop(request);
        notifier.abort();
        answer
    }

    fn wait(&self, seconds: Option<u64>) -> Duration {
        seconds
            .map(Duration::from_secs)
            .unwrap_or(self.default_wait)
            .min(MAX_WAIT)
    }

    /// A request id of this server's own client (NATS would not let it read another's anyway),
    /// or the tool error that says why not: the caller sees it and can correct itself.
    fn own_request(&self, request_id: &str) -> Result<RequestId, CallToolResult> {
        let refuse = |why: String| CallToolResult::error(vec![ContentBlock::text(why)]);
        let id: RequestId = request_id
            .parse()
            .map_err(|e| refuse(format!("{:?} is not a request id: {e}", visible_line(request_id))))?;
        match id.client() {
            Some(client) if client == self.client.user() => Ok(id),
            _ => Err(refuse(format!(
                "{} is not a request of this server's client {}: its runs' ids start with \"{}.\"",
                visible_line(request_id),
                self.client.user(),
                self.client.user()
            ))),
        }
    }
}

#[tool_handler]
impl ServerHandler for AirlockTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("airlock", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// A finished request as MCP content: a summary line, the output, and the `airlock run --json`
/// object as structured content. Anything but "ran and exited" is a tool error, with its reason.
pub fn result_content(result: &RunResult) -> CallToolResult {
    let t = &result.terminal;
    let mut summary = format!("{}: {}", result.request_id, t.outcome.as_str());
    if let Some(level) = t.level {
        summary.push_str(&format!(", rated {level}"));
    }
    if let Some(code) = t.exit_code {
        summary.push_str(&format!(", exit code {code}"));
    }
    if let Some(usage) = t.usage {
        summary.push_str(&format!(", {} ms", usage.wall_ms));
    }
    if let Some(approver) = t.decision.as_ref().map(|d| approver_words(&d.approver)) {
        summary.push_str(&format!(
            "; {} {approver}",
            t.decision.as_ref().map(|d| d.decision.as_str()).unwrap_or("")
        ));
    }
    if let Some(violation) = &t.violation {
        summary.push_str(&format!(
            "; stopped: {} limit ({})",
            violation.kind.as_str(),
            visible_line(&violation.detail)
        ));
    }
    if let Some(reason) = &t.reason {
        summary.push_str(&format!("; {}", visible_line(reason)));
    }
    summary.push_str(match &result.receipt {
        Some(_) => "; recorded in the audit log (check_receipt verifies it)",
        None => "; the audit receipt has not come yet (check_receipt fetches it later)",
    });
    let mut content = vec![ContentBlock::text(summary)];
    for (name, bytes) in [("stdout", &t.stdout), ("stderr", &t.stderr)] {
        if !bytes.is_empty() {
            content.push(ContentBlock::text(format!(
                "{name}:\n{}",
                String::from_utf8_lossy(bytes)
            )));
        }
    }
    for file in &t.files {
        content.push(file_content(file));
    }
    let ran = t.outcome == Outcome::Finished;
    let mut answer = match ran {
        true => CallToolResult::success(content),
        false => CallToolResult::error(content),
    };
    answer.structured_content = Some(result.to_json());
    answer
}

/// Media types an MCP client shows as a picture.
const SHOWN_AS_IMAGES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// Text files longer than this are named, not inlined (the structured content has them all).
const MAX_INLINE_TEXT: usize = 16 * 1024;

/// One returned file as MCP content: a picture as an image, text inlined when short, anything
/// else named with its size and digest (its bytes are in the structured content).
fn file_content(file: &OutputFile) -> ContentBlock {
    let name = visible_line(&file.name);
    if let Some(why) = &file.omitted {
        return ContentBlock::text(format!(
            "out/{name} ({}, {} bytes, {}): not returned: {}",
            file.media_type,
            file.size,
            file.sha256,
            visible_line(why)
        ));
    }
    if SHOWN_AS_IMAGES.contains(&file.media_type.as_str()) {
        return ContentBlock::image(
            base64::engine::general_purpose::STANDARD.encode(&file.content),
            file.media_type.clone(),
        );
    }
    match std::str::from_utf8(&file.content) {
        Ok(text) if text.len() <= MAX_INLINE_TEXT => ContentBlock::text(format!(
            "out/{name} ({}, {} bytes):\n{text}",
            file.media_type, file.size
        )),
        _ => ContentBlock::text(format!(
            "out/{name} ({}, {} bytes, {}): its bytes are in the structured content (files[].content_base64)",
            file.media_type, file.size, file.sha256
        )),
    }
}

/// A request that has not ended within the wait: where it is, and how to pick it up again.
fn still_going(id: &RequestId, stage: Option<&Progress>) -> CallToolResult {
    let place = stage
        .map(|s| visible_line(&s.describe()))
        .unwrap_or_else(|| "submitted".to_owned());
    let mut answer = CallToolResult::success(vec![ContentBlock::text(format!(
        "{id} is still going ({place}); call get_result with request_id \"{id}\" to wait for it again"
    ))]);
    answer.structured_content = Some(serde_json::json!({
        "request_id": id,
        "status": stage.map(|s| s.stage()).unwrap_or("submitted"),
        "ended": false,
    }));
    answer
}

fn approver_words(approver: &airlock_protocol::Approver) -> String {
    use airlock_protocol::Approver;
    match approver {
        Approver::Policy { rule } => format!("by policy ({})", visible_line(rule)),
        Approver::Human { who, reason, .. } => {
            format!("by {} ({})", visible_line(who), visible_line(reason))
        }
        Approver::Remembered { who, .. } => format!("by {}'s remembered approval", visible_line(who)),
        Approver::Deadline => "because nobody answered before the deadline".to_owned(),
    }
}

fn internal(error: impl std::error::Error + 'static) -> ErrorData {
    ErrorData::internal_error(airlock_protocol::refusal::error_chain(&error), None)
}
