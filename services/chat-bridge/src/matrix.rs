//! Matrix, through the client-server API of any homeserver (tested against Synapse): the bot
//! posts each request to its room as an `m.text` with an HTML body, mentioning who may answer
//! (`m.mentions`, so that the homeserver's default push rules notify them), edits it
//! (`m.replace`, notifying nobody again) when the request changes or ends, and reads the room with `/sync`, saving its position in the
//! bridge's bucket so that answers given while the bridge, the homeserver or NATS was down are
//! read when they are back. Every send carries a transaction id derived from what it is for, so
//! a retry after a crash posts nothing twice.

use crate::adapter::{Adapter, ChatError, ChatResult, http_client, json_reply};
use crate::answers::{Core, Incoming};
use crate::command::{Parsed, parse};
use crate::config::{MatrixConfig, read_secret};
use crate::render::{self, Message, View};
use airlock_bus::retry::{Backoff, pause};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const SYSTEM: &str = "matrix";
/// How long one `/sync` waits for news.
const SYNC_TIMEOUT_MS: u64 = 25_000;
/// Pages of 100 messages read back when a sync skipped some.
const BACKFILL_PAGES: usize = 10;
/// Bounds on a message's plain and HTML bodies: an event, with both and an edit's copy of both,
/// must stay under Matrix's 65,536 bytes.
const MAX_BODY: usize = 10 * 1024;
const MAX_HTML: usize = 14 * 1024;

pub struct Matrix {
    config: MatrixConfig,
    token: String,
    http: reqwest::Client,
    /// Rooms the bot must be in and reads answers in: its own, escalation rooms, and any room
    /// it was asked to post in (joined before the first post there).
    rooms: std::sync::RwLock<Vec<String>>,
}

fn segment(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

fn err(source: reqwest::Error) -> ChatError {
    ChatError::Http { system: SYSTEM, source }
}

impl Matrix {
    /// Reads the access token; `extra_rooms` are escalation rooms the bot must join too.
    pub fn new(config: MatrixConfig, extra_rooms: Vec<String>) -> Result<Self, ChatError> {
        let token = read_secret(&config.access_token_file).map_err(|source| ChatError::Secret {
            system: SYSTEM,
            what: config.access_token_file.display().to_string(),
            source,
        })?;
        let mut rooms = vec![config.room_id.clone()];
        for room in extra_rooms {
            if !rooms.contains(&room) {
                rooms.push(room);
            }
        }
        Ok(Self {
            config,
            token,
            http: http_client(),
            rooms: std::sync::RwLock::new(rooms),
        })
    }

    fn url(&self, path: &str) -> String {
        format!(
            "{}/_matrix/client/v3{path}",
            self.config.homeserver.trim_end_matches('/')
        )
    }

    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, ChatError> {
        let response = request.bearer_auth(&self.token).send().await.map_err(err)?;
        json_reply(SYSTEM, response).await
    }

    /// Who the token belongs to (checked at start against `user_id`).
    pub async fn whoami(&self) -> Result<String, ChatError> {
        let reply = self.call(self.http.get(self.url("/account/whoami"))).await?;
        Ok(reply["user_id"].as_str().unwrap_or_default().to_owned())
    }

    /// Joins a room (works once invited, or for public rooms).
    pub async fn join(&self, room: &str) -> Result<(), ChatError> {
        self.call(
            self.http
                .post(self.url(&format!("/join/{}", segment(room))))
                .json(&json!({})),
        )
        .await
        .map(|_| ())
    }

    /// Whether a room is end-to-end encrypted (it has `m.room.encryption` state, which cannot be
    /// removed): the bot, which holds no keys, can neither read answers there nor post readable
    /// requests.
    pub async fn encrypted(&self, room: &str) -> Result<bool, ChatError> {
        let path = format!("/rooms/{}/state/m.room.encryption/", segment(room));
        match self.call(self.http.get(self.url(&path))).await {
            Ok(_) => Ok(true),
            Err(ChatError::Status { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The room's members who have joined or are invited, with that membership.
    pub async fn members(&self, room: &str) -> Result<BTreeMap<String, String>, ChatError> {
        let path = format!("/rooms/{}/members", segment(room));
        let reply = self
            .call(self.http.get(self.url(&path)).query(&[("not_membership", "leave")]))
            .await?;
        Ok(reply["chunk"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|event| {
                let user = event["state_key"].as_str()?;
                let membership = event["content"]["membership"].as_str()?;
                matches!(membership, "join" | "invite").then(|| (user.to_owned(), membership.to_owned()))
            })
            .collect())
    }

    /// Whether the room's power levels let the bot send messages: (its level, the level
    /// needed). A room without power levels lets everyone post.
    pub async fn post_levels(&self, room: &str) -> Result<(i64, i64), ChatError> {
        let path = format!("/rooms/{}/state/m.room.power_levels/", segment(room));
        let levels = match self.call(self.http.get(self.url(&path))).await {
            Ok(levels) => levels,
            Err(ChatError::Status { status: 404, .. }) => return Ok((0, 0)),
            Err(e) => return Err(e),
        };
        let number = |v: &Value| v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok()));
        let mine = number(&levels["users"][&self.config.user_id])
            .or_else(|| number(&levels["users_default"]))
            .unwrap_or(0);
        let needed = number(&levels["events"]["m.room.message"])
            .or_else(|| number(&levels["events_default"]))
            .unwrap_or(0);
        Ok((mine, needed))
    }

    fn rooms(&self) -> Vec<String> {
        self.rooms.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn reads(&self, room: &str) -> bool {
        self.rooms
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|r| r == room)
    }

    /// Joins a room it has not been told about before posting there (an escalation room the
    /// gate names), and reads answers there from then on. A refused join (`M_FORBIDDEN`: not
    /// invited) is the post's error.
    async fn enter(&self, room: &str) -> Result<(), ChatError> {
        if self.reads(room) {
            return Ok(());
        }
        self.join(room).await?;
        tracing::info!(room, "joined a room it posts to");
        let mut rooms = self.rooms.write().unwrap_or_else(|p| p.into_inner());
        if !rooms.iter().any(|r| r == room) {
            rooms.push(room.to_owned());
        }
        Ok(())
    }

    async fn send(&self, room: &str, txn: &str, content: Value) -> Result<String, ChatError> {
        self.enter(room).await?;
        let path = format!("/rooms/{}/send/m.room.message/{}", segment(room), segment(txn));
        let reply = self.call(self.http.put(self.url(&path)).json(&content)).await?;
        match reply["event_id"].as_str() {
            Some(id) => Ok(id.to_owned()),
            None => Err(ChatError::Api {
                system: SYSTEM,
                error: format!("no event id in {reply}"),
            }),
        }
    }

    async fn sync(&self, since: Option<&str>, timeout_ms: u64, timeline_limit: u32) -> Result<Value, ChatError> {
        let filter = json!({
            "room": {
                "rooms": self.rooms(),
                "timeline": { "limit": timeline_limit, "types": ["m.room.message"] },
                "state": { "lazy_load_members": true, "types": [] },
                "ephemeral": { "types": [] },
                "account_data": { "types": [] },
            },
            "presence": { "types": [] },
            "account_data": { "types": [] },
        });
        let mut query = vec![("timeout", timeout_ms.to_string()), ("filter", filter.to_string())];
        if let Some(since) = since {
            query.push(("since", since.to_owned()));
        }
        let request = self
            .http
            .get(self.url("/sync"))
            .query(&query)
            .timeout(Duration::from_millis(timeout_ms + 15_000));
        self.call(request).await
    }

    /// The event content of a message: plain and HTML bodies, and exactly the mentions it means.
    fn content(message: &Message, now_ms: i64) -> Value {
        let mut mentions = json!({ "user_ids": message.mentions });
        if message.mention_room {
            mentions["room"] = json!(true);
        }
        json!({
            "msgtype": "m.text",
            "body": render::plain::render(message, now_ms, MAX_BODY),
            "format": "org.matrix.custom.html",
            "formatted_body": render::html::render(message, now_ms, MAX_HTML),
            "m.mentions": mentions,
        })
    }

    /// Reads the room until shut down: answers in it are handed to `core`, and the bot replies
    /// to each with what became of it.
    pub async fn run_sync(self: Arc<Self>, core: Arc<Core>, shutdown: CancellationToken) {
        let mut failures = 0u32;
        let mut not_joined = Vec::new();
        for room in self.rooms() {
            if let Err(e) = self.join(&room).await {
                tracing::warn!(room, error = %airlock_protocol::error_chain(&e), "cannot join a room it posts to (it joins when invited)");
                not_joined.push(format!("{room}: {}", airlock_protocol::error_chain(&e)));
            }
        }
        // Shown by `airlock status` until the bridge joins (restarted after the invitation).
        if !not_joined.is_empty() {
            core.counters
                .set_problem("matrix_rooms", format!("cannot join {}", not_joined.join("; ")));
        }
        loop {
            if shutdown.is_cancelled() {
                return;
            }
            let step = self.sync_once(&core).await;
            let delay = match step {
                Ok(()) => {
                    failures = 0;
                    continue;
                }
                Err(e) => {
                    failures += 1;
                    core.counters.incr("matrix_sync_failures");
                    tracing::warn!(error = %airlock_protocol::error_chain(&e), failures, "matrix sync failed; retrying");
                    e.retry_after()
                        .unwrap_or_else(|| Backoff::OUTAGE.delay(failures).max(Duration::from_millis(500)))
                }
            };
            if !pause(&shutdown, delay).await {
                return;
            }
        }
    }

    async fn sync_once(self: &Arc<Self>, core: &Core) -> Result<(), SyncError> {
        let since = core.store.position(SYSTEM).await?;
        let Some(since) = since else {
            // First start: begin from now, not from the room's history.
            let reply = self.sync(None, 0, 0).await?;
            self.handle_invites(core, &reply).await;
            if let Some(next) = reply["next_batch"].as_str() {
                core.store.set_position(SYSTEM, next).await?;
            }
            return Ok(());
        };
        let reply = self.sync(Some(&since), SYNC_TIMEOUT_MS, 100).await?;
        self.handle_invites(core, &reply).await;
        if let Some(rooms) = reply["rooms"]["join"].as_object() {
            for (room, data) in rooms {
                if !self.reads(room) {
                    continue;
                }
                if data["timeline"]["limited"].as_bool() == Some(true)
                    && let Some(from) = data["timeline"]["prev_batch"].as_str()
                {
                    // More arrived than one sync returns (the bridge was away a while): read the
                    // gap back to what was handled before, oldest first.
                    for event in self.backfill(core, room, from).await? {
                        self.handle_event(core, room, &event).await?;
                    }
                }
                for event in data["timeline"]["events"].as_array().into_iter().flatten() {
                    self.handle_event(core, room, event).await?;
                }
            }
        }
        // Saved after the events are handled: a crash before this reads them again, and each
        // event is handled once (see `handle_event`).
        if let Some(next) = reply["next_batch"].as_str() {
            core.store.set_position(SYSTEM, next).await?;
        }
        Ok(())
    }

    /// Messages before `from`, back to the first one already handled (at most
    /// [`BACKFILL_PAGES`] pages), oldest first.
    async fn backfill(&self, core: &Core, room: &str, from: &str) -> Result<Vec<Value>, SyncError> {
        let mut gap = Vec::new();
        let mut from = from.to_owned();
        for _ in 0..BACKFILL_PAGES {
            let path = format!("/rooms/{}/messages", segment(room));
            let query = [("from", from.as_str()), ("dir", "b"), ("limit", "100")];
            let reply = self.call(self.http.get(self.url(&path)).query(&query)).await?;
            let chunk = reply["chunk"].as_array().cloned().unwrap_or_default();
            let mut reached = chunk.is_empty();
            for event in chunk {
                let id = event["event_id"].as_str().unwrap_or_default();
                if core.store.seen(SYSTEM, id).await? {
                    reached = true;
                    break;
                }
                gap.push(event);
            }
            match reply["end"].as_str() {
                Some(end) if !reached => from = end.to_owned(),
                _ => break,
            }
        }
        core.counters.incr("matrix_gaps_read");
        tracing::warn!(room, messages = gap.len(), "read a gap in the room's timeline");
        gap.reverse();
        Ok(gap)
    }

    async fn handle_invites(&self, core: &Core, reply: &Value) {
        if let Some(invites) = reply["rooms"]["invite"].as_object() {
            for room in invites.keys() {
                if self.reads(room) {
                    match self.join(room).await {
                        Ok(()) => {
                            tracing::info!(room, "joined the room it was invited to");
                            core.counters.clear_problem("matrix_rooms");
                        }
                        Err(e) => tracing::warn!(room, error = %airlock_protocol::error_chain(&e), "could not join"),
                    }
                }
            }
        }
    }

    async fn handle_event(self: &Arc<Self>, core: &Core, room: &str, event: &Value) -> Result<(), SyncError> {
        let (Some(event_id), Some(sender)) = (event["event_id"].as_str(), event["sender"].as_str()) else {
            return Ok(());
        };
        if sender == self.config.user_id || event["type"] != "m.room.message" {
            return Ok(());
        }
        let content = &event["content"];
        // An edit of a message is not a new answer.
        if content["m.relates_to"]["rel_type"] == "m.replace" {
            return Ok(());
        }
        let Some(body) = content["body"].as_str() else {
            return Ok(());
        };
        if event_id.len() > 255 || sender.len() > 255 || core.store.seen(SYSTEM, event_id).await? {
            return Ok(());
        }
        let replied = content["m.relates_to"]["m.in_reply_to"]["event_id"].as_str();
        let bound_to = match replied {
            Some(original) if original.len() <= 255 => core.store.request_of_message(SYSTEM, original).await?,
            _ => None,
        };
        let reply = match parse(body, bound_to.is_some()) {
            Parsed::NotACommand => None,
            Parsed::Invalid(why) => Some(render::notices::reply(sender, render::Line::new().text(why), None)),
            // Something that reads like an answer: told what to write, where it can be meant as one.
            Parsed::NearMiss(what) if bound_to.is_some() || core.has_waiting(SYSTEM, room) => {
                core.counters.incr("near_miss_answers");
                Some(render::notices::reply(sender, render::Line::new().text(what), None))
            }
            Parsed::NearMiss(_) => None,
            Parsed::Command(command) => {
                let incoming = Incoming {
                    system: SYSTEM,
                    place: room.to_owned(),
                    reference: event_id.to_owned(),
                    who: sender.to_owned(),
                    command,
                    bound_to,
                };
                Some(core.answer(incoming).await?.message)
            }
        };
        if let Some(message) = reply {
            let txn = format!("airlock-reply-{}", crate::txn_id(&[event_id]));
            let mut content = Self::content(&message, airlock_protocol::now_ms());
            content["m.relates_to"] = json!({ "m.in_reply_to": { "event_id": event_id } });
            self.reply_later(room, &txn, content);
        }
        core.store.first_sight(SYSTEM, event_id).await?;
        Ok(())
    }
}

/// How long a reply to an answer keeps waiting out the homeserver's rate limit.
const REPLY_PATIENCE: Duration = Duration::from_secs(300);

impl Matrix {
    /// Replies in a room the bot reads (so is in), in the background: under a burst the
    /// homeserver rate-limits the bot, and the reply waits its turn (the time each 429 names)
    /// instead of being dropped or holding up the answers after it. The transaction id makes a
    /// retry post it once.
    fn reply_later(self: &Arc<Self>, room: &str, txn: &str, content: Value) {
        let (matrix, room, txn) = (self.clone(), room.to_owned(), txn.to_owned());
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            loop {
                match matrix.send(&room, &txn, content.clone()).await {
                    Ok(_) => return,
                    Err(ChatError::RateLimited { retry_after, .. }) if started.elapsed() < REPLY_PATIENCE => {
                        tokio::time::sleep(retry_after).await;
                    }
                    Err(e) => {
                        // The answer itself is relayed; only the confirmation is lost.
                        tracing::warn!(error = %airlock_protocol::error_chain(&e), "could not reply in the room");
                        return;
                    }
                }
            }
        });
    }
}

#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error(transparent)]
    Chat(#[from] ChatError),
    #[error("the bridge's records")]
    Store(#[from] airlock_bus::ClaimError),
    #[error("handling an answer")]
    Answer(#[from] crate::answers::AnswerError),
}

impl SyncError {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            SyncError::Chat(e) => e.retry_after(),
            _ => None,
        }
    }
}

impl Adapter for Matrix {
    fn system(&self) -> &'static str {
        SYSTEM
    }

    fn place(&self) -> &str {
        &self.config.room_id
    }

    fn post_request<'a>(
        &'a self,
        place: &'a str,
        _view: &'a View<'a>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, String> {
        Box::pin(async move { self.send(place, txn, Self::content(message, now_ms)).await })
    }

    fn edit_request<'a>(
        &'a self,
        place: &'a str,
        id: &'a str,
        _view: &'a View<'a>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, ()> {
        Box::pin(async move {
            let new_content = Self::content(message, now_ms);
            let content = json!({
                "msgtype": "m.text",
                "body": format!("* {}", new_content["body"].as_str().unwrap_or_default()),
                "format": "org.matrix.custom.html",
                "formatted_body": format!("* {}", new_content["formatted_body"].as_str().unwrap_or_default()),
                "m.new_content": new_content,
                "m.relates_to": { "rel_type": "m.replace", "event_id": id },
                // An edit notifies nobody anew.
                "m.mentions": {},
            });
            self.send(place, txn, content).await.map(|_| ())
        })
    }

    fn post<'a>(
        &'a self,
        place: &'a str,
        reply_to: Option<&'a str>,
        message: &'a Message,
        now_ms: i64,
        txn: &'a str,
    ) -> ChatResult<'a, String> {
        Box::pin(async move {
            let mut content = Self::content(message, now_ms);
            if let Some(original) = reply_to {
                content["m.relates_to"] = json!({ "m.in_reply_to": { "event_id": original } });
            }
            self.send(place, txn, content).await
        })
    }
}
