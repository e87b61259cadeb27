//! A Matrix user as a human's client would be: logs in, creates and joins rooms, writes and
//! replies, and reads the room's timeline.

use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct MatrixUser {
    pub user_id: String,
    pub token: String,
    base: String,
    http: reqwest::Client,
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.' || b == b'~' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

impl MatrixUser {
    pub async fn login(base: &str, name: &str, password: &str) -> MatrixUser {
        let http = reqwest::Client::new();
        let reply: Value = http
            .post(format!("{base}/_matrix/client/v3/login"))
            .json(&json!({
                "type": "m.login.password",
                "identifier": { "type": "m.id.user", "user": name },
                "password": password,
            }))
            .send()
            .await
            .expect("login")
            .json()
            .await
            .expect("login reply");
        MatrixUser {
            user_id: reply["user_id"].as_str().expect("user_id").to_owned(),
            token: reply["access_token"].as_str().expect("access_token").to_owned(),
            base: base.to_owned(),
            http,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/_matrix/client/v3{path}", self.base);
        for _ in 0..50 {
            let mut request = self.http.request(method.clone(), &url).bearer_auth(&self.token);
            if let Some(body) = &body {
                request = request.json(body);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => {
                    return response.json().await.expect("json reply");
                }
                Ok(response) => panic!(
                    "{} {path} answered {}: {}",
                    self.user_id,
                    response.status(),
                    response.text().await.unwrap_or_default()
                ),
                // The homeserver is restarting.
                Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
            }
        }
        panic!("{} could not reach the homeserver for {path}", self.user_id)
    }

    pub async fn create_room(&self, invite: &[&str]) -> String {
        self.create_room_with(json!({ "preset": "private_chat", "name": "airlock approvals", "invite": invite }))
            .await
    }

    /// A room end-to-end encrypted from the start, as clients create them by default.
    pub async fn create_encrypted_room(&self, invite: &[&str]) -> String {
        self.create_room_with(json!({
            "preset": "private_chat",
            "name": "airlock approvals (encrypted)",
            "invite": invite,
            "initial_state": [{
                "type": "m.room.encryption",
                "state_key": "",
                "content": { "algorithm": "m.megolm.v1.aes-sha2" },
            }],
        }))
        .await
    }

    /// `POST /createRoom` with this body; returns the room's id.
    pub async fn create_room_with(&self, body: Value) -> String {
        let reply = self.call(reqwest::Method::POST, "/createRoom", Some(body)).await;
        reply["room_id"].as_str().expect("room_id").to_owned()
    }

    pub async fn join(&self, room: &str) {
        self.call(reqwest::Method::POST, &format!("/join/{}", enc(room)), Some(json!({})))
            .await;
    }

    pub async fn send(&self, room: &str, content: Value) -> String {
        let txn = format!("t{}", airlock_protocol::MessageId::new());
        let reply = self
            .call(
                reqwest::Method::PUT,
                &format!("/rooms/{}/send/m.room.message/{}", enc(room), enc(&txn)),
                Some(content),
            )
            .await;
        reply["event_id"].as_str().expect("event_id").to_owned()
    }

    pub async fn say(&self, room: &str, text: &str) -> String {
        self.send(room, json!({ "msgtype": "m.text", "body": text })).await
    }

    /// A reply, as current clients send it (no quoted fallback).
    pub async fn reply(&self, room: &str, to: &str, text: &str) -> String {
        self.send(
            room,
            json!({
                "msgtype": "m.text",
                "body": text,
                "m.relates_to": { "m.in_reply_to": { "event_id": to } },
            }),
        )
        .await
    }

    /// The room's latest messages, oldest first.
    pub async fn messages(&self, room: &str) -> Vec<Value> {
        let reply = self
            .call(
                reqwest::Method::GET,
                &format!("/rooms/{}/messages?dir=b&limit=200", enc(room)),
                None,
            )
            .await;
        let mut events: Vec<Value> = reply["chunk"].as_array().cloned().unwrap_or_default();
        events.reverse();
        events.into_iter().filter(|e| e["type"] == "m.room.message").collect()
    }

    /// What this user's client shows for a room, as Synapse's push rules counted it:
    /// (notifications, highlights) unread (`unread_notifications` of `/sync`).
    pub async fn unread(&self, room: &str) -> (u64, u64) {
        let reply = self.call(reqwest::Method::GET, "/sync?timeout=0", None).await;
        let counts = &reply["rooms"]["join"][room]["unread_notifications"];
        (
            counts["notification_count"].as_u64().unwrap_or_default(),
            counts["highlight_count"].as_u64().unwrap_or_default(),
        )
    }

    /// How Synapse notified this user of an event (`GET /notifications`): `None` when it did
    /// not, else whether it was highlighted (a mention: the phone rings, the room is marked).
    pub async fn notified_of(&self, event_id: &str) -> Option<bool> {
        let reply = self.call(reqwest::Method::GET, "/notifications?limit=100", None).await;
        let notification = reply["notifications"]
            .as_array()?
            .iter()
            .find(|n| n["event"]["event_id"] == event_id)?
            .clone();
        let highlight = notification["actions"].as_array().is_some_and(|actions| {
            actions
                .iter()
                .any(|a| a["set_tweak"] == "highlight" && a.get("value").is_none_or(|v| v.as_bool() != Some(false)))
        });
        Some(highlight)
    }

    /// Waits for a message matching `want`.
    pub async fn wait_for(&self, room: &str, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            if let Some(event) = self.messages(room).await.into_iter().find(|e| want(e)) {
                return event;
            }
            if start.elapsed() > Duration::from_secs(90) {
                let bodies: Vec<String> = self
                    .messages(room)
                    .await
                    .iter()
                    .map(|e| format!("{}: {}", e["sender"], e["content"]["body"]))
                    .collect();
                panic!("no message {what} in the room; it has:\n{}", bodies.join("\n"));
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// The text of a message, or of its replacement for an edit.
pub fn body(event: &Value) -> &str {
    event["content"]["m.new_content"]["body"]
        .as_str()
        .or_else(|| event["content"]["body"].as_str())
        .unwrap_or_default()
}

/// Whether `event` edits `original`.
pub fn edits(event: &Value, original: &str) -> bool {
    event["content"]["m.relates_to"]["rel_type"] == "m.replace"
        && event["content"]["m.relates_to"]["event_id"] == original
}

/// Whether `event` replies to `original`.
pub fn replies_to(event: &Value, original: &str) -> bool {
    event["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == original
}
