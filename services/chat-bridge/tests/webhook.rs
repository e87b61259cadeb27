//! The generic webhook, both ways and both signing schemes: the receiver gets each override
//! request as signed JSON (and checks the signature itself, as any receiver would), answers with
//! a signed POST to the bridge, and gets the request's end; forged, stale and replayed answers
//! are refused and recorded.

mod common;

use airlock_chat_bridge::config::{Config, WebhookConfig, WebhookSigning};
use airlock_protocol::{Approver, DecisionOutcome, RefusalReason};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use base64::Engine as _;
use common::{Harness, free_addr, now_secs, serve, write_secret};
use ed25519_dalek::{Signer as _, Verifier as _};
use hmac::{KeyInit as _, Mac as _};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const SECRET: &str = "webhook-shared-secret";

#[derive(Clone)]
enum Check {
    Hmac,
    Ed25519(ed25519_dalek::VerifyingKey),
}

/// A receiver: keeps each body whose signature it could verify, and counts the others.
#[derive(Clone)]
struct Receiver {
    check: Check,
    good: Arc<Mutex<Vec<Value>>>,
    bad: Arc<Mutex<usize>>,
}

fn hmac_hex(timestamp: &str, body: &[u8]) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> &'static str {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (ts, sig) = (get("x-airlock-timestamp"), get("x-airlock-signature"));
    let fresh = ts.parse::<i64>().is_ok_and(|t| (now_secs() - t).abs() <= 300);
    let valid = fresh
        && match &r.check {
            Check::Hmac => sig == format!("v1={}", hmac_hex(&ts, &body)),
            Check::Ed25519(key) => sig
                .strip_prefix("ed25519=")
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .and_then(|b| ed25519_dalek::Signature::from_slice(&b).ok())
                .is_some_and(|s| key.verify(&[ts.as_bytes(), b".", &body].concat(), &s).is_ok()),
        };
    if valid {
        r.good
            .lock()
            .unwrap()
            .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    } else {
        *r.bad.lock().unwrap() += 1;
    }
    "{}"
}

impl Receiver {
    async fn wait(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..300 {
            if let Some(v) = self.good.lock().unwrap().iter().find(|v| want(v)) {
                return v.clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!(
            "no webhook {what}; got {:?} (and {} badly signed)",
            self.good.lock().unwrap(),
            self.bad.lock().unwrap()
        );
    }
}

async fn answer(
    h: &Harness,
    body: &Value,
    sign: impl Fn(&str, &[u8]) -> String,
    ts: i64,
) -> (u16, Value, (String, String)) {
    let bytes = body.to_string().into_bytes();
    let timestamp = ts.to_string();
    let signature = sign(&timestamp, &bytes);
    let (status, text) = h
        .post(
            "/webhook/answer",
            &[
                ("x-airlock-timestamp", timestamp.clone()),
                ("x-airlock-signature", signature.clone()),
            ],
            bytes,
            "application/json",
        )
        .await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        (timestamp, signature),
    )
}

#[tokio::test]
async fn hmac_signed_round_trip_with_forged_stale_and_replayed_answers() {
    let secrets = tempfile::tempdir().unwrap();
    let receiver = Receiver {
        check: Check::Hmac,
        good: Default::default(),
        bad: Default::default(),
    };
    let url = serve(
        axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(receiver.clone()),
    )
    .await;
    let config = Config {
        listen: free_addr(),
        webhook: Some(WebhookConfig {
            name: "pager".into(),
            url: format!("{url}/hook"),
            signing: WebhookSigning::HmacSha256,
            secret_file: Some(write_secret(secrets.path(), "secret", SECRET)),
            answer_public_key: None,
            approvers: vec!["oncall@example.org".into()],
        }),
        ..Config::default()
    };
    let mut h = Harness::start("webhook", &["oncall@example.org"], config).await;
    let rid = h.blocked().await;
    let asked = receiver
        .wait("asking", |v| {
            v["type"] == "override_asked" && v["request_id"] == rid.as_str()
        })
        .await;
    assert_eq!(asked["asked"]["level"], "BLOCKED");
    assert!(asked["text"].as_str().unwrap_or_default().contains("line 2"), "{asked}");
    assert_eq!(*receiver.bad.lock().unwrap(), 0, "the bridge's signatures verify");

    let hmac_sign = |ts: &str, body: &[u8]| format!("v1={}", hmac_hex(ts, body));
    let body = json!({ "request_id": rid.as_str(), "approve": true, "reason": "paged and checked", "who": "oncall@example.org" });
    // Forged and stale.
    let (status, _, _) = answer(&h, &body, |_, _| format!("v1={}", "0".repeat(64)), now_secs()).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::BadSignature);
    let (status, _, _) = answer(&h, &body, hmac_sign, now_secs() - 600).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::Expired);
    // Good.
    let (status, reply, (ts, sig)) = answer(&h, &body, hmac_sign, now_secs()).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["accepted"], true, "{reply}");
    let decision = h.decision(&rid).await;
    assert!(matches!(decision.outcome, DecisionOutcome::Approved { .. }));
    assert!(
        matches!(&decision.approver, Approver::Human { who, via, .. } if who == "oncall@example.org" && via.as_deref() == Some("webhook pager"))
    );
    // Replayed byte for byte.
    let (status, _) = h
        .post(
            "/webhook/answer",
            &[("x-airlock-timestamp", ts), ("x-airlock-signature", sig)],
            body.to_string().into_bytes(),
            "application/json",
        )
        .await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::Replayed);

    h.finished(&rid, &decision).await;
    let ended = receiver
        .wait("the end", |v| {
            v["type"] == "override_ended" && v["request_id"] == rid.as_str()
        })
        .await;
    assert_eq!(ended["ended"]["outcome"], "finished");
}

/// A label written to be read as Airlock's verdict, with a line separator and a bidi override.
const HOSTILE_LABEL: &str = "pipe.py) rated LOW: no findings\u{2028}Security review: safe to approve \u{202E}";

#[tokio::test]
async fn a_requesters_label_reaches_the_receiver_and_the_answerer_as_quoted_data() {
    let secrets = tempfile::tempdir().unwrap();
    let receiver = Receiver {
        check: Check::Hmac,
        good: Default::default(),
        bad: Default::default(),
    };
    let url = serve(
        axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(receiver.clone()),
    )
    .await;
    let config = Config {
        listen: free_addr(),
        webhook: Some(WebhookConfig {
            name: "pager".into(),
            url: format!("{url}/hook"),
            signing: WebhookSigning::HmacSha256,
            secret_file: Some(write_secret(secrets.path(), "secret", SECRET)),
            answer_public_key: None,
            approvers: vec!["oncall@example.org".into()],
        }),
        ..Config::default()
    };
    let mut h = Harness::start("webhook", &["oncall@example.org"], config).await;
    let rid = h.blocked_as(None, HOSTILE_LABEL).await;
    let asked = receiver
        .wait("asking", |v| {
            v["type"] == "override_asked" && v["request_id"] == rid.as_str()
        })
        .await;
    let text = asked["text"].as_str().unwrap_or_default();
    let shown = "\"pipe.py) rated LOW: no findings⟨U+2028⟩Security review: safe to approve ⟨U+202E⟩\"";
    assert!(text.contains(&format!("labelled by the requester {shown}")), "{text}");
    assert!(!text.contains('\u{2028}') && !text.contains('\u{202E}'), "{text:?}");
    assert!(!text.lines().any(|l| l.starts_with("Security review")), "{text}");
    // The structured copy is the requester's own text, as it came: for programs, not people.
    assert_eq!(asked["asked"]["label"], HOSTILE_LABEL);

    // The answer's reply names the request it went to, with the label quoted the same way.
    let hmac_sign = |ts: &str, body: &[u8]| format!("v1={}", hmac_hex(ts, body));
    let body =
        json!({ "request_id": rid.as_str(), "approve": false, "reason": "not this one", "who": "oncall@example.org" });
    let (status, reply, _) = answer(&h, &body, hmac_sign, now_secs()).await;
    assert_eq!(status, 200, "{reply}");
    let message = reply["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("denied by oncall@example.org") && message.contains(rid.as_str()) && message.contains(shown),
        "{message}"
    );
    let decision = h.decision(&rid).await;
    assert!(matches!(decision.outcome, DecisionOutcome::Denied { .. }));
}

#[tokio::test]
async fn ed25519_signed_round_trip() {
    let receiver_key = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
    let config = Config {
        listen: free_addr(),
        webhook: Some(WebhookConfig {
            name: "internal-tool".into(),
            url: String::new(),
            signing: WebhookSigning::Ed25519,
            secret_file: None,
            answer_public_key: Some(
                base64::engine::general_purpose::STANDARD.encode(receiver_key.verifying_key().to_bytes()),
            ),
            approvers: vec!["alice".into()],
        }),
        ..Config::default()
    };
    // The receiver checks the bridge's signature with the bridge's public key, known once the
    // bridge's key exists: start the receiver with a placeholder, then point it at the key.
    let bridge_key_dir = tempfile::tempdir().unwrap();
    let key_file = bridge_key_dir.path().join("bridge.key");
    let bridge_key = airlock_protocol::SigningKey::load_or_generate(&key_file, "test/bridge").unwrap();
    // (The key's bytes, not a parse of its text: base64 may itself contain '+'.)
    let public = ed25519_dalek::VerifyingKey::from_bytes(&bridge_key.verifier().public_bytes()).unwrap();
    let receiver = Receiver {
        check: Check::Ed25519(public),
        good: Default::default(),
        bad: Default::default(),
    };
    let url = serve(
        axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(receiver.clone()),
    )
    .await;
    let mut config = config;
    if let Some(w) = config.webhook.as_mut() {
        w.url = format!("{url}/hook");
    }
    let mut h = Harness::start_with_key("webhook", &["alice"], config, &key_file).await;
    let rid = h.blocked().await;
    receiver
        .wait("asking, signed by the bridge's key", |v| {
            v["type"] == "override_asked" && v["request_id"] == rid.as_str()
        })
        .await;
    let sign = |ts: &str, body: &[u8]| {
        format!(
            "ed25519={}",
            base64::engine::general_purpose::STANDARD
                .encode(receiver_key.sign(&[ts.as_bytes(), b".", body].concat()).to_bytes())
        )
    };
    let deny = json!({ "request_id": rid.as_str(), "approve": false, "reason": "not today", "who": "alice" });
    let other = ed25519_dalek::SigningKey::from_bytes(&[6u8; 32]);
    let forged = |ts: &str, body: &[u8]| {
        format!(
            "ed25519={}",
            base64::engine::general_purpose::STANDARD
                .encode(other.sign(&[ts.as_bytes(), b".", body].concat()).to_bytes())
        )
    };
    let (status, _, _) = answer(&h, &deny, forged, now_secs()).await;
    assert_eq!(status, 401);
    assert_eq!(h.refusal(Some(&rid)).await.reason, RefusalReason::BadSignature);
    let (status, reply, _) = answer(&h, &deny, sign, now_secs()).await;
    assert_eq!(status, 200, "{reply}");
    let decision = h.decision(&rid).await;
    assert!(matches!(decision.outcome, DecisionOutcome::Denied { .. }));
}
