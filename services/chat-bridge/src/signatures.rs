//! How each chat system signs what it sends, checked exactly as each documents it. Pure: the
//! caller supplies the clock, so staleness is tested without waiting.
//!
//! - Slack: `X-Slack-Signature: v0=hex(HMAC-SHA256(signing secret, "v0:" + timestamp + ":" + body))`
//!   with `X-Slack-Request-Timestamp`, refused when more than five minutes from now.
//! - Discord: `X-Signature-Ed25519: hex(Ed25519 signature of timestamp + body)` by the
//!   application's key, with `X-Signature-Timestamp`.
//! - Airlock webhooks: `X-Airlock-Signature: v1=hex(HMAC-SHA256(secret, timestamp + "." + body))`
//!   or `ed25519=base64(signature of timestamp + "." + body)`, with `X-Airlock-Timestamp`.

use crate::config::SIGNATURE_WINDOW_SECS;
use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureCheck {
    #[error("no signature or timestamp header")]
    Missing,
    #[error("the timestamp is not a number of seconds")]
    BadTimestamp,
    #[error("the timestamp is {skew_secs} s away from now (at most {SIGNATURE_WINDOW_SECS} s are accepted)")]
    Stale { skew_secs: i64 },
    #[error("the signature does not verify")]
    Forged,
}

impl SignatureCheck {
    /// The refusal reason recorded for it.
    pub fn reason(&self) -> airlock_protocol::RefusalReason {
        use airlock_protocol::RefusalReason;
        match self {
            SignatureCheck::Stale { .. } => RefusalReason::Expired,
            SignatureCheck::Missing | SignatureCheck::BadTimestamp => RefusalReason::Malformed,
            SignatureCheck::Forged => RefusalReason::BadSignature,
        }
    }
}

fn fresh(timestamp: &str, now_secs: i64) -> Result<(), SignatureCheck> {
    let ts: i64 = timestamp.trim().parse().map_err(|_| SignatureCheck::BadTimestamp)?;
    let skew_secs = now_secs.saturating_sub(ts).saturating_abs();
    if skew_secs > SIGNATURE_WINDOW_SECS {
        return Err(SignatureCheck::Stale { skew_secs });
    }
    Ok(())
}

fn hmac_hex(secret: &[u8], parts: &[&[u8]]) -> String {
    // HMAC accepts keys of any length; this cannot fail.
    let mut mac = match HmacSha256::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    for part in parts {
        mac.update(part);
    }
    hex::encode(mac.finalize().into_bytes())
}

fn hmac_verify(secret: &[u8], parts: &[&[u8]], expected_hex: &str) -> bool {
    let Ok(expected) = hex::decode(expected_hex.trim()) else {
        return false;
    };
    let Ok(mut mac) = HmacSha256::new_from_slice(secret) else {
        return false;
    };
    for part in parts {
        mac.update(part);
    }
    // Constant-time comparison.
    mac.verify_slice(&expected).is_ok()
}

/// Slack's `v0` signature of a request.
pub fn slack_sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    format!(
        "v0={}",
        hmac_hex(secret.as_bytes(), &[b"v0:", timestamp.as_bytes(), b":", body])
    )
}

/// An Ed25519 public key from 64 hex digits (Discord's form) or base64 of 32 bytes.
pub fn parse_ed25519_public(text: &str) -> Option<ed25519_dalek::VerifyingKey> {
    let text = text.trim();
    let bytes = hex::decode(text)
        .ok()
        .or_else(|| base64::engine::general_purpose::STANDARD.decode(text).ok())?;
    let bytes: [u8; 32] = bytes.try_into().ok()?;
    ed25519_dalek::VerifyingKey::from_bytes(&bytes).ok()
}

fn ed25519_verify(key: &ed25519_dalek::VerifyingKey, message: &[&[u8]], signature: &[u8]) -> bool {
    let Ok(signature) = ed25519_dalek::Signature::from_slice(signature) else {
        return false;
    };
    let message: Vec<u8> = message.concat();
    key.verify_strict(&message, &signature).is_ok()
}

/// The `X-Airlock-Signature` value of an outgoing webhook, signed with an HMAC secret.
pub fn webhook_hmac_sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    format!(
        "v1={}",
        hmac_hex(secret.as_bytes(), &[timestamp.as_bytes(), b".", body])
    )
}

/// The `X-Airlock-Signature` value of an outgoing webhook, signed with the bridge's key.
pub fn webhook_ed25519_sign(key: &airlock_protocol::SigningKey, timestamp: &str, body: &[u8]) -> String {
    let message = [timestamp.as_bytes(), b".", body].concat();
    format!(
        "ed25519={}",
        base64::engine::general_purpose::STANDARD.encode(key.sign(&message))
    )
}

/// Who signs an incoming interaction, and with what.
#[derive(Clone, Copy)]
pub enum Signer<'a> {
    /// Slack, with the app's signing secret.
    Slack(&'a str),
    /// Discord, with the application's public key.
    Discord(&'a ed25519_dalek::VerifyingKey),
    /// An Airlock webhook answer, with the shared HMAC secret.
    WebhookHmac(&'a str),
    /// An Airlock webhook answer, with the answering system's Ed25519 key.
    WebhookEd25519(&'a ed25519_dalek::VerifyingKey),
}

impl Signer<'_> {
    /// Both headers present, the timestamp inside the window, then the signature, in that order
    /// for every chat: a stale request is refused as stale whatever its signature.
    pub fn verify(
        &self,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
        now_secs: i64,
    ) -> Result<(), SignatureCheck> {
        let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
            return Err(SignatureCheck::Missing);
        };
        fresh(timestamp, now_secs)?;
        let signature = signature.trim();
        let ts = timestamp.as_bytes();
        let ok = match self {
            Signer::Slack(secret) => signature
                .strip_prefix("v0=")
                .is_some_and(|hex_part| hmac_verify(secret.as_bytes(), &[b"v0:", ts, b":", body], hex_part)),
            Signer::Discord(key) => hex::decode(signature).is_ok_and(|sig| ed25519_verify(key, &[ts, body], &sig)),
            Signer::WebhookHmac(secret) => signature
                .strip_prefix("v1=")
                .is_some_and(|hex_part| hmac_verify(secret.as_bytes(), &[ts, b".", body], hex_part)),
            Signer::WebhookEd25519(public) => signature
                .strip_prefix("ed25519=")
                .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
                .is_some_and(|sig| ed25519_verify(public, &[ts, b".", body], &sig)),
        };
        if ok { Ok(()) } else { Err(SignatureCheck::Forged) }
    }

    /// What the sender is told of a refused signature. Discord documents its own words.
    pub fn refusal_text(&self, check: &SignatureCheck) -> String {
        match self {
            Signer::Discord(_) => "invalid request signature".into(),
            _ => check.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::Signer as _;

    // Vectors computed independently with Python's `hmac` and `cryptography` modules.
    const SLACK_SECRET: &str = "airlock-test-signing-secret";
    const SLACK_TS: &str = "1700000000";
    const SLACK_BODY: &str = "payload=%7B%22type%22%3A%22block_actions%22%7D";
    const SLACK_SIGNATURE: &str = "v0=43cfd9f8b90604c724f4210c7f50f3ef89572ad54e6baf2139552c51ef34a456";
    const DISCORD_SIGNATURE: &str = "f7caed702889e902c2cde4a4fb00f601284aa47ff4caf84588d7c8c3d8fe7183fd73e13e30d0c07d1515b6684f7b3cfaa231c421768d9667b104f760cf0da302";

    #[test]
    fn slack_signatures_verify_and_alterations_do_not() {
        let now = 1_700_000_000 + 10;
        assert_eq!(
            slack_sign(SLACK_SECRET, SLACK_TS, SLACK_BODY.as_bytes()),
            SLACK_SIGNATURE
        );
        assert_eq!(
            Signer::Slack(SLACK_SECRET).verify(Some(SLACK_TS), Some(SLACK_SIGNATURE), SLACK_BODY.as_bytes(), now),
            Ok(())
        );
        let mut tampered = SLACK_BODY.as_bytes().to_vec();
        tampered[10] ^= 1;
        assert_eq!(
            Signer::Slack(SLACK_SECRET).verify(Some(SLACK_TS), Some(SLACK_SIGNATURE), &tampered, now),
            Err(SignatureCheck::Forged)
        );
        assert_eq!(
            Signer::Slack("other secret").verify(Some(SLACK_TS), Some(SLACK_SIGNATURE), SLACK_BODY.as_bytes(), now),
            Err(SignatureCheck::Forged)
        );
        // The timestamp is signed: moving it breaks the signature even inside the window.
        assert_eq!(
            Signer::Slack(SLACK_SECRET).verify(Some("1700000001"), Some(SLACK_SIGNATURE), SLACK_BODY.as_bytes(), now),
            Err(SignatureCheck::Forged)
        );
        assert!(matches!(
            Signer::Slack(SLACK_SECRET).verify(Some(SLACK_TS), Some(SLACK_SIGNATURE), SLACK_BODY.as_bytes(), now + 301),
            Err(SignatureCheck::Stale { .. })
        ));
        assert_eq!(
            Signer::Slack(SLACK_SECRET).verify(None, Some(SLACK_SIGNATURE), SLACK_BODY.as_bytes(), now),
            Err(SignatureCheck::Missing)
        );
    }

    #[test]
    fn discord_signatures_cover_timestamp_and_body() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
        let public = key.verifying_key();
        let body = br#"{"type":1}"#;
        let ts = "1700000000";
        let sig = hex::encode(key.sign(&[ts.as_bytes(), body.as_slice()].concat()).to_bytes());
        assert_eq!(sig, DISCORD_SIGNATURE);
        let now = 1700000000;
        assert_eq!(Signer::Discord(&public).verify(Some(ts), Some(&sig), body, now), Ok(()));
        assert_eq!(
            Signer::Discord(&public).verify(Some(ts), Some(&sig), br#"{"type":2}"#, now),
            Err(SignatureCheck::Forged)
        );
        assert_eq!(
            Signer::Discord(&public).verify(Some("1700000001"), Some(&sig), body, now),
            Err(SignatureCheck::Forged)
        );
        assert!(matches!(
            Signer::Discord(&public).verify(Some(ts), Some(&sig), body, now - 3600),
            Err(SignatureCheck::Stale { .. })
        ));
        assert_eq!(
            Signer::Discord(&public).verify(Some(ts), Some("zz"), body, now),
            Err(SignatureCheck::Forged)
        );
        let hex_key = hex::encode(public.to_bytes());
        assert_eq!(parse_ed25519_public(&hex_key), Some(public));
        assert_eq!(parse_ed25519_public("nope"), None);
    }

    #[test]
    fn webhook_signatures_both_ways() {
        let body = br#"{"request_id":"r1"}"#;
        let ts = "1700000000";
        let sig = webhook_hmac_sign("s3cret", ts, body);
        assert_eq!(
            Signer::WebhookHmac("s3cret").verify(Some(ts), Some(&sig), body, 1700000000),
            Ok(())
        );
        assert_eq!(
            Signer::WebhookHmac("other").verify(Some(ts), Some(&sig), body, 1700000000),
            Err(SignatureCheck::Forged)
        );
        let key = airlock_protocol::SigningKey::from_seed("t/w", [3u8; 32]).unwrap();
        let sig = webhook_ed25519_sign(&key, ts, body);
        let public = ed25519_dalek::SigningKey::from_bytes(&[3u8; 32]).verifying_key();
        assert_eq!(
            Signer::WebhookEd25519(&public).verify(Some(ts), Some(&sig), body, 1700000000),
            Ok(())
        );
        assert_eq!(
            Signer::WebhookEd25519(&public).verify(Some(ts), Some(&sig), b"{}", 1700000000),
            Err(SignatureCheck::Forged)
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_headers_and_bodies_never_verify_or_panic(
            ts in "\\PC{0,24}",
            sig in "\\PC{0,140}",
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
        ) {
            let now = 1_700_000_000;
            proptest::prop_assert!(Signer::Slack(SLACK_SECRET).verify(Some(&ts), Some(&sig), &body, now).is_err());
            let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]).verifying_key();
            proptest::prop_assert!(Signer::Discord(&key).verify(Some(&ts), Some(&sig), &body, now).is_err());
            proptest::prop_assert!(Signer::WebhookHmac("s").verify(Some(&ts), Some(&sig), &body, now).is_err());
            proptest::prop_assert!(Signer::WebhookEd25519(&key).verify(Some(&ts), Some(&sig), &body, now).is_err());
        }
    }
}
