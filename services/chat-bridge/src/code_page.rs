//! The page with a request's whole code, one click from its message (the chat shows the first
//! lines): served by the bridge's listener at `/code/<request id>/<token>`, where the token is
//! 128 random bits kept with the request, so that only those who were shown the message can open
//! it. It lapses an hour after the request's deadline (every request has ended by then).
//!
//! The code is from outside: it is sent as numbered plain text, never as HTML, with deceptive
//! characters made visible as in the chat, and headers that keep a browser from sniffing it into
//! anything else, caching it or telling the next site where it came from.

use crate::answers::Core;
use crate::state::Tracked;
use airlock_protocol::text::visible_line;
use airlock_protocol::{RequestId, now_ms};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// How long after the request's deadline its page can still be opened.
pub const LASTS_AFTER_DEADLINE_MS: i64 = 3_600_000;

/// A fresh token for one request's page.
pub fn new_token() -> String {
    let mut bytes = [0u8; 16];
    // Without a token there is no page (the message shows no link); the OS generator failing is
    // not a reason to stop tracking the request.
    match getrandom::fill(&mut bytes) {
        Ok(()) => hex::encode(bytes),
        Err(e) => {
            tracing::warn!(error = %e, "no random token for a code page: the message will have no link");
            String::new()
        }
    }
}

/// The page's address under the bridge's public URL.
pub fn link(public_url: &str, tracked: &Tracked) -> Option<String> {
    if tracked.code_token.is_empty() || tracked.asked.code.is_empty() {
        return None;
    }
    Some(format!(
        "{}/code/{}/{}",
        public_url.trim_end_matches('/'),
        tracked.request_id,
        tracked.code_token
    ))
}

/// `GET /code/<request id>/<token>`.
pub async fn serve(core: &Core, request_id: &str, token: &str) -> Response {
    let not_found = || {
        (
            StatusCode::NOT_FOUND,
            "No such page: the link is wrong, or it lapsed an hour after the request's deadline.\n",
        )
            .into_response()
    };
    let Ok(rid) = RequestId::parse(request_id) else {
        return not_found();
    };
    let tracked = match core.store.tracked(&rid).await {
        Ok(Some(tracked)) => tracked,
        Ok(None) => return not_found(),
        Err(e) => {
            tracing::warn!(error = %airlock_bus::error_text(&e), "code page: bridge records unavailable");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "The bridge's records are unavailable; try again.\n",
            )
                .into_response();
        }
    };
    // Compared as digests, so that the time taken says nothing about how much of a guess was right.
    let same = |a: &str, b: &str| Sha256::digest(a.as_bytes()) == Sha256::digest(b.as_bytes());
    if tracked.code_token.is_empty()
        || !same(&tracked.code_token, token)
        || now_ms() > tracked.asked.deadline_ms.saturating_add(LASTS_AFTER_DEADLINE_MS)
    {
        return not_found();
    }
    let mut response = page(&tracked).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CONTENT_SECURITY_POLICY, "default-src 'none'; sandbox"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The page's text: what it is, then every line numbered.
fn page(tracked: &Tracked) -> String {
    let asked = &tracked.asked;
    let code = String::from_utf8_lossy(&asked.code);
    let lines: Vec<&str> = code.lines().collect();
    let width = lines.len().max(1).to_string().len();
    let mut out = format!(
        "Airlock: the whole code of request {}\n{} {} code, {} lines, {} bytes, {}\n\
         Deceptive characters are shown as ⟨U+XXXX⟩. Answer in the chat where you were asked.\n\n",
        tracked.request_id,
        asked.level,
        asked.language.as_str(),
        lines.len(),
        asked.code.len(),
        asked.code_digest,
    );
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&format!("{:>width$} | {}\n", i + 1, visible_line(line)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::{CodeDigest, OverrideAsked};

    #[test]
    fn the_page_numbers_every_line_and_shows_deceptive_characters() {
        let code = "import os\nx = 'safe' \u{202E} # tail\n".repeat(40).into_bytes();
        let asked = OverrideAsked {
            code_digest: CodeDigest::of(&code),
            code,
            ..OverrideAsked::display_only()
        };
        let tracked = Tracked::new(RequestId::parse("mai.r1").expect("id"), asked);
        let text = page(&tracked);
        assert!(
            text.starts_with("Airlock: the whole code of request mai.r1\n"),
            "{text}"
        );
        assert!(text.contains("80 lines"), "{text}");
        assert!(text.contains("\n80 | x = 'safe' ⟨U+202E⟩ # tail\n"), "{text}");
        assert!(!text.contains('\u{202E}'));
        let link = link("https://airlock.example.org/", &tracked).expect("a link");
        assert!(link.starts_with("https://airlock.example.org/code/mai.r1/"), "{link}");
        assert_eq!(tracked.code_token.len(), 32, "128 random bits");
        let other = Tracked::new(RequestId::parse("mai.r1").expect("id"), tracked.asked.clone());
        assert_ne!(other.code_token, tracked.code_token, "each request its own token");
    }
}
