//! What a human types in a chat room, read strictly: `approve <request-id> <reason>` or
//! `deny <request-id> <reason>` (the start of an id names the request: see [`crate::routing`]),
//! or, in reply to the bot's message, `approve <reason>` / `deny <reason>`. An approval may end with
//! `--again <duration>` ("approve this exact code again for that long"). Everything here came
//! from outside: sizes are bounded, control characters removed, and anything unclear is refused
//! with a message saying how to write it.

use airlock_protocol::RequestId;
use std::time::Duration;

/// Longest chat message read as a command.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// Longest reason accepted.
pub const MAX_REASON_CHARS: usize = 500;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub approve: bool,
    /// The request id or prefix the human named; `None` in a reply that names none.
    pub target: Option<String>,
    pub reason: String,
    /// The approver's explicit choice to approve this exact code again for this long.
    pub again: Option<Duration>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Ordinary conversation: not addressed to the bridge.
    NotACommand,
    Command(Command),
    /// Addressed to the bridge but not readable; the text says why and how to write it.
    Invalid(String),
    /// Reads like an answer (`Approve, looks fine`, `deny: …`, `Denied - …`, `👎 deny …`) but
    /// is not one; the text says exactly what to write. The caller answers it when the message
    /// replies to a request or the room has one waiting (otherwise it is conversation).
    NearMiss(String),
}

const USAGE: &str = "write `approve <request-id> <reason>` or `deny <request-id> <reason>` (or reply to the request with `approve <reason>` / `deny <reason>`)";

/// Removes a Matrix reply fallback (the quoted original: leading `> ` lines and the blank line
/// after them), which older clients put before the reply's own text.
fn strip_reply_fallback(text: &str) -> &str {
    let mut rest = text;
    let mut stripped = false;
    while let Some(line_end) = rest.find('\n') {
        if rest.starts_with('>') {
            rest = &rest[line_end + 1..];
            stripped = true;
        } else {
            break;
        }
    }
    if stripped { rest.trim_start_matches('\n') } else { text }
}

/// Whether a word is written like a request id or the start of one (`mai.0193a1b2`, `0193a1b2`).
fn looks_like_id(token: &str) -> bool {
    crate::routing::long_enough(token) && token.len() <= 100 && is_id_text(token)
}

fn is_id_text(token: &str) -> bool {
    token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// Reads a message. `is_reply`: it replies to one of the bot's messages, so the request may go
/// unnamed.
pub fn parse(text: &str, is_reply: bool) -> Parsed {
    if text.len() > MAX_MESSAGE_BYTES {
        // Long messages are conversation, or an attempt to make the bridge work hard.
        return Parsed::NotACommand;
    }
    let text = if is_reply { strip_reply_fallback(text) } else { text };
    let cleaned: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let mut words = cleaned.split_whitespace();
    let approve = match words.next().map(str::to_ascii_lowercase).as_deref() {
        Some("approve") | Some("!approve") => true,
        Some("deny") | Some("!deny") => false,
        _ => return near_miss(&cleaned, is_reply).map_or(Parsed::NotACommand, Parsed::NearMiss),
    };
    let mut words: Vec<&str> = words.collect();
    let mut again = None;
    if let Some(at) = words
        .iter()
        .position(|w| w.eq_ignore_ascii_case("--again") || w.starts_with("--again="))
    {
        if !approve {
            return Parsed::Invalid("`--again` goes with an approval only".into());
        }
        let (value, used) = match words[at].split_once('=') {
            Some((_, v)) => (Some(v), 1),
            None => (words.get(at + 1).copied(), 2),
        };
        let Some(value) = value else {
            return Parsed::Invalid("`--again` needs a duration, such as `--again 4h`".into());
        };
        match humantime::parse_duration(value) {
            Ok(d) if !d.is_zero() => again = Some(d),
            _ => return Parsed::Invalid(format!("`--again {value}` is not a duration (try `--again 4h`)")),
        }
        if at + used != words.len() {
            return Parsed::Invalid("put `--again <duration>` at the end, after the reason".into());
        }
        words.truncate(at);
    }
    let target = if is_reply {
        // In a reply the first word is the request only if it looks like one; the caller checks
        // it against the request replied to.
        words.first().filter(|w| looks_like_id(w)).map(|w| (*w).to_owned())
    } else {
        match words.first() {
            Some(w) if looks_like_id(w) => Some((*w).to_owned()),
            Some(w) if is_id_text(w) && w.bytes().any(|b| b.is_ascii_digit()) => {
                return Parsed::Invalid(format!(
                    "`{w}` is too short to name a request: give at least {} characters of its id (after the client's name)",
                    crate::routing::MIN_TYPED
                ));
            }
            _ => return Parsed::Invalid(format!("say which request: {USAGE}")),
        }
    };
    let reason_words = if target.is_some() && !is_reply {
        &words[1..]
    } else {
        &words[..]
    };
    let reason = reason_words.join(" ");
    Parsed::Command(Command {
        approve,
        target,
        reason,
        again,
    })
}

/// Words that read as an answer, and which answer.
fn answer_word(word: &str, is_reply: bool) -> Option<bool> {
    match word {
        "approve" | "approved" | "approving" | "accept" | "accepted" => Some(true),
        "deny" | "denied" | "denying" | "reject" | "rejected" | "decline" | "declined" => Some(false),
        // In a reply to a request, a bare yes or no is meant as an answer too.
        "lgtm" | "ok" | "okay" | "yes" | "👍" | "✅" if is_reply => Some(true),
        "no" | "nope" | "👎" | "❌" if is_reply => Some(false),
        _ => None,
    }
}

/// What to write instead of something that reads like an answer but is not one.
fn near_miss(text: &str, is_reply: bool) -> Option<String> {
    let mut words = text.split_whitespace().peekable();
    // Leading emoji and punctuation (`👎 deny …`, `- approve`).
    let mut first = words.next()?;
    let mut leading = String::new();
    while !first.chars().any(char::is_alphanumeric) && words.peek().is_some() {
        leading.push_str(first);
        if answer_word(first, is_reply).is_some() {
            break;
        }
        first = words.next()?;
    }
    let trimmed: String = first
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    let after_emoji = trimmed.is_empty();
    let word = if after_emoji { first.to_owned() } else { trimmed };
    let approve = answer_word(&word, is_reply).or_else(|| answer_word(&leading, is_reply))?;
    let verb = if approve { "approve" } else { "deny" };
    // `👎 deny …`: the word after the emoji says the same; it is not part of the reason.
    if after_emoji
        && let Some(next) = words.peek()
        && answer_word(&next.trim_end_matches([':', ',']).to_lowercase(), is_reply) == Some(approve)
    {
        words.next();
    }
    let rest: Vec<&str> = words
        .map(|w| w.trim_start_matches(['-', '–', '—', ':', ',']))
        .filter(|w| !w.is_empty())
        .collect();
    let reason = if rest.is_empty() {
        "<reason>".to_owned()
    } else {
        rest.join(" ")
    };
    Some(if is_reply {
        format!(
            "this was not counted: to {verb} this request, reply to it with exactly `{verb} {reason}` (the word {verb} first, then the reason)"
        )
    } else {
        format!(
            "this was not counted: write exactly `{verb} <request-id> {reason}`, or reply to the request's message with `{verb} {reason}`"
        )
    })
}

impl Command {
    /// The reason once the request is known: in a reply, a leading id of that same request is
    /// not part of the reason. Refuses a missing or oversized reason.
    pub fn reason_for(&self, request: &RequestId, is_reply: bool) -> Result<String, String> {
        let mut reason = self.reason.as_str();
        if is_reply
            && let Some(t) = &self.target
            && crate::routing::starts(request, t)
        {
            reason = reason[t.len()..].trim_start();
        }
        let reason = reason.trim();
        if reason.is_empty() {
            let verb = if self.approve { "approve" } else { "deny" };
            return Err(format!("a reason is required: `{verb} {request} <reason>`"));
        }
        if reason.chars().count() > MAX_REASON_CHARS {
            return Err(format!(
                "the reason is too long (at most {MAX_REASON_CHARS} characters)"
            ));
        }
        Ok(reason.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(text: &str, reply: bool) -> Command {
        match parse(text, reply) {
            Parsed::Command(c) => c,
            other => panic!("{text:?} → {other:?}"),
        }
    }

    #[test]
    fn full_and_prefixed_ids_with_reasons() {
        let c = cmd(
            "approve 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b checked the URL, it is ours",
            false,
        );
        assert!(c.approve);
        assert_eq!(c.target.as_deref(), Some("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"));
        assert_eq!(c.reason, "checked the URL, it is ours");
        // Ids name their client (`<client>.<local>`): the whole id, as shown, is an id.
        let c = cmd("approve mai.0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b fine", false);
        assert_eq!(c.target.as_deref(), Some("mai.0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"));
        assert_eq!(c.reason, "fine");
        let c = cmd("DENY 0193a1b2 no downloads from there", false);
        assert!(!c.approve);
        assert_eq!(c.target.as_deref(), Some("0193a1b2"));
        assert!(matches!(parse("approve 0193a1 ok", false), Parsed::Invalid(m) if m.contains("too short")));
        // Ids name their client: the whole id, or the start of its own part, is typed.
        let c = cmd("approve mai.0193a1b2-c3d4 checked", false);
        assert_eq!(c.target.as_deref(), Some("mai.0193a1b2-c3d4"));
        assert!(matches!(parse("approve mai.0193 ok", false), Parsed::Invalid(m) if m.contains("too short")));
        assert!(matches!(parse("approve", false), Parsed::Invalid(_)));
        assert_eq!(parse("I approve of this plan", false), Parsed::NotACommand);
        assert_eq!(parse("hello", false), Parsed::NotACommand);
    }

    #[test]
    fn replies_need_no_id_and_drop_the_quoted_original() {
        let c = cmd(
            "> <@airlock:localhost> Request 0193a1b2 is waiting\n> more\n\napprove fine by me",
            true,
        );
        assert_eq!(c.target, None);
        assert_eq!(c.reason, "fine by me");
        let rid = RequestId::parse("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").unwrap();
        let c = cmd("approve 0193a1b2", true);
        assert_eq!(
            c.reason_for(&rid, true),
            Err("a reason is required: `approve 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b <reason>`".into())
        );
        // A first word that is not this request's id is part of the reason.
        let c = cmd("approve deadbeefcafe is the hash I expected", true);
        assert_eq!(
            c.reason_for(&rid, true).as_deref(),
            Ok("deadbeefcafe is the hash I expected")
        );
        let c = cmd("approve 0193a1b2 reviewed", true);
        assert_eq!(c.reason_for(&rid, true).as_deref(), Ok("reviewed"));
        let c = cmd("deny", true);
        assert!(c.reason_for(&rid, true).is_err(), "a reason is required");
    }

    #[test]
    fn near_misses_are_told_exactly_what_to_write() {
        let miss = |text: &str, reply: bool| match parse(text, reply) {
            Parsed::NearMiss(m) => m,
            other => panic!("{text:?} → {other:?}"),
        };
        assert!(miss("Approve, looks fine", true).contains("`approve looks fine`"));
        assert!(miss("deny: no downloads", true).contains("`deny no downloads`"));
        assert!(miss("Denied - not from there", false).contains("`deny <request-id> not from there`"));
        assert!(miss("👎 deny not without a review", true).contains("`deny not without a review`"));
        assert!(miss("👍", true).contains("`approve <reason>`"));
        assert!(miss("lgtm", true).contains("`approve <reason>`"));
        // Conversation is left alone.
        assert_eq!(parse("lgtm", false), Parsed::NotACommand);
        assert_eq!(parse("I approve of this plan", false), Parsed::NotACommand);
        assert_eq!(parse("no", false), Parsed::NotACommand);
    }

    #[test]
    fn approve_again_is_explicit_and_bounded_to_approvals() {
        let c = cmd("approve 0193a1b2 same script as yesterday --again 4h", false);
        assert_eq!(c.again, Some(Duration::from_secs(4 * 3600)));
        assert_eq!(c.reason, "same script as yesterday");
        let c = cmd("approve 0193a1b2 ok --again=30m", false);
        assert_eq!(c.again, Some(Duration::from_secs(1800)));
        assert!(matches!(
            parse("deny 0193a1b2 no --again 4h", false),
            Parsed::Invalid(_)
        ));
        assert!(matches!(
            parse("approve 0193a1b2 ok --again soon", false),
            Parsed::Invalid(_)
        ));
        assert!(matches!(
            parse("approve 0193a1b2 ok --again 4h trailing", false),
            Parsed::Invalid(_)
        ));
    }

    #[test]
    fn input_is_bounded_and_cleaned() {
        assert_eq!(parse(&"approve x ".repeat(1000), false), Parsed::NotACommand);
        let c = cmd("approve 0193a1b2 line one\u{0}\u{7}line two", false);
        assert_eq!(c.reason, "line one line two");
        let long = format!("approve 0193a1b2 {}", "x".repeat(MAX_REASON_CHARS + 1));
        let rid = RequestId::parse("0193a1b2-aaaa").unwrap();
        assert!(cmd(&long, false).reason_for(&rid, false).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_without_panicking_and_reasons_stay_bounded(text in "\\PC{0,600}", reply in proptest::bool::ANY) {
            let rid = RequestId::parse("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").unwrap();
            if let Parsed::Command(c) = parse(&text, reply)
                && let Ok(reason) = c.reason_for(&rid, reply)
            {
                proptest::prop_assert!(reason.chars().count() <= MAX_REASON_CHARS);
                proptest::prop_assert!(!reason.chars().any(char::is_control));
            }
        }

        #[test]
        fn commands_with_any_words_parse(words in proptest::collection::vec("[a-zA-Z0-9_\\-:!@.]{1,20}", 0..12)) {
            let text = format!("approve {}", words.join(" "));
            let _ = parse(&text, false);
            let _ = parse(&text, true);
        }
    }
}
