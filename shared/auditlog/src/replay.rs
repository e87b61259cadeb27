//! Reading the log as a story: entries in order, filtered by request, kind and time, with their
//! blobs put back, a request's code, and the diff to the request it revises. The diff is
//! computed here from the two code blobs rather than stored: both are in the log already, and
//! a stored diff would add nothing a verifier could check.

use crate::entry::{BlobRef, Entry};
use crate::reader::{LogReader, ReadError};
use airlock_protocol::{
    Approver, Assessment, Decision, DecisionOutcome, Event, ExecutionRequest, Limits, OverrideAnswer, Terminal,
};
use serde_json::{Value, json};
use std::collections::HashMap;

#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub request: Option<String>,
    pub kind: Option<String>,
    pub since_ms: Option<i64>,
    /// Start at this sequence number (for following a log).
    pub from_seq: u64,
}

impl Filter {
    pub fn matches(&self, entry: &Entry) -> bool {
        self.request.as_deref().is_none_or(|r| entry.request_id == r)
            && self.kind.as_deref().is_none_or(|k| entry.kind == k)
            && self.since_ms.is_none_or(|t| entry.time_ms >= t)
    }
}

#[derive(Clone, Debug)]
pub struct ReplayItem {
    pub seq: u64,
    pub entry: Entry,
    /// The event with its blobs put back (None for `malformed` and `gap` entries).
    pub event: Option<Event>,
    /// Blob slot → content (absent when pruned).
    pub content: Vec<(String, Option<Vec<u8>>)>,
    /// For a submission that revises another request: that request and the unified diff.
    pub diff: Option<(String, String)>,
}

impl ReplayItem {
    pub fn to_json(&self) -> Value {
        let content: serde_json::Map<String, Value> = self
            .content
            .iter()
            .map(|(slot, bytes)| {
                (
                    slot.clone(),
                    bytes.as_deref().map(text_or_base64).unwrap_or(Value::Null),
                )
            })
            .collect();
        let mut value = json!({
            "seq": self.seq,
            "time_ms": self.entry.time_ms,
            "kind": self.entry.kind,
            "request_id": self.entry.request_id,
            "producer": self.entry.producer,
            "message_id": self.entry.message_id,
            "event_time_ms": self.entry.event_time_ms,
            "stream_seq": self.entry.stream_seq,
            "event": self.event.as_ref().map(|e| readable_bytes(serde_json::to_value(e).unwrap_or(Value::Null))),
            "malformed": self.entry.malformed,
            "gap": self.entry.gap,
            "blobs": self.entry.blobs,
            "withheld": self.entry.withheld,
            "content": content,
            "prev": self.entry.prev.to_hex(),
        });
        if let Some((revises, diff)) = &self.diff {
            value["revises"] = json!(revises);
            value["diff"] = json!(diff);
        }
        value
    }

    /// One or more lines for people, for a terminal: everything in an entry came from outside
    /// (code, output, labels, reasons), so every control, bidirectional or invisible character
    /// is shown as `⟨U+…⟩` rather than obeyed (an OSC 52 in program output would otherwise
    /// write the operator's clipboard).
    pub fn to_text(&self) -> String {
        airlock_protocol::text::visible_block(&self.raw_text())
    }

    fn raw_text(&self) -> String {
        let time = humantime_ms(self.entry.time_ms);
        let mut out = format!(
            "#{} {} {:<17} {} {}",
            self.seq,
            time,
            self.entry.kind,
            self.entry.request_id,
            self.entry.producer.as_deref().unwrap_or("-")
        );
        if let Some(summary) = self.summary() {
            out.push_str("  ");
            out.push_str(&summary);
        }
        out.push('\n');
        for (slot, bytes) in &self.content {
            if slot == "code" || slot == "raw" {
                match bytes {
                    Some(b) => {
                        out.push_str(&format!("  --- {slot} ---\n"));
                        for line in String::from_utf8_lossy(b).lines() {
                            out.push_str(&format!("  | {line}\n"));
                        }
                    }
                    None => out.push_str(&format!("  --- {slot}: pruned ---\n")),
                }
            }
        }
        for (slot, w) in &self.entry.withheld {
            out.push_str(&format!(
                "  --- {slot}: not stored ({} bytes, BLAKE3 {}): {} ---\n",
                w.len, w.b3, w.reason
            ));
        }
        if let Some((revises, diff)) = &self.diff {
            out.push_str(&format!("  --- diff against {revises} ---\n"));
            for line in diff.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }

    /// What the entry says, for people: every event in full, on one line where it fits and
    /// indented lines where it does not.
    fn summary(&self) -> Option<String> {
        if let Some(m) = &self.entry.malformed {
            return Some(format!("{} on {}: {}", m.error_kind, m.subject, m.error));
        }
        if let Some(g) = &self.entry.gap {
            return Some(format!(
                "stream {}..={}: {}",
                g.first_stream_seq, g.last_stream_seq, g.reason
            ));
        }
        Some(match self.event.as_ref()? {
            Event::Submitted(r) => describe_request(r),
            Event::Assessed(a) => describe_assessment(&a.assessment),
            Event::OverrideAsked(o) => format!(
                "{}, deadline {}: {}",
                o.level.as_str(),
                humantime_ms(o.deadline_ms),
                o.explanation.trim_end().replace('\n', "\n    ")
            ),
            Event::OverrideAnswered(a) => match a.signed.peek::<OverrideAnswer>() {
                Some(answer) => format!(
                    "{} by {}{} (key {}+{:08x}): {}{}",
                    if answer.approve { "approved" } else { "denied" },
                    answer.who,
                    answer
                        .via
                        .as_ref()
                        .map(|v| format!(" in {} {}", v.system, v.place))
                        .unwrap_or_default(),
                    a.signed.key_name,
                    a.signed.key_id,
                    answer.reason,
                    answer
                        .refused_at_edge
                        .as_ref()
                        .map(|r| format!(" [refused by the bridge: {}: {}]", r.reason.as_str(), r.detail))
                        .unwrap_or_default(),
                ),
                None => format!("an unreadable answer signed by {}", a.signed.key_name),
            },
            Event::Decided(d) => match d.signed.peek::<Decision>() {
                Some(decision) => describe_decision(&decision),
                None => format!("an unreadable decision signed by {}", d.signed.key_name),
            },
            Event::ExecStarted(e) => format!(
                "{}container {} ({}{}), limits {}",
                if e.attempt > 1 {
                    format!("attempt {}: ", e.attempt)
                } else {
                    String::new()
                },
                e.container.chars().take(12).collect::<String>(),
                e.image,
                if e.warm { ", warm" } else { "" },
                describe_limits(&e.limits)
            ),
            Event::Output(c) => format!(
                "{} #{}: {}",
                serde_plain(&c.stream),
                c.seq,
                String::from_utf8_lossy(&c.data).trim_end().replace('\n', "\n    ")
            ),
            Event::Usage(u) => format!(
                "at {} ms: {} KiB, {} ms CPU, {} processes",
                u.elapsed_ms,
                u.memory_bytes / 1024,
                u.cpu_ms,
                u.pids
            ),
            Event::Activity(a) => {
                let more = |n: u64| {
                    if n > 0 {
                        format!(" and {n} more not listed")
                    } else {
                        String::new()
                    }
                };
                format!(
                    "{}files {:?}{}, processes {:?}{}, network {:?}{}",
                    if a.untrusted { "(reported by the program) " } else { "" },
                    a.files_created,
                    more(a.files_omitted),
                    a.processes,
                    more(a.processes_omitted),
                    a.network_attempts,
                    more(a.network_attempts_omitted)
                )
            }
            Event::Observed(o) => o.lines().join("\n    "),
            Event::Egress(e) => format!(
                "{} {} {} -> {} ({} bytes){}",
                if e.allowed { "allowed" } else { "refused" },
                e.method,
                e.url,
                e.status.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
                e.bytes,
                e.reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default()
            ),
            Event::Terminal(t) => describe_terminal(t),
            Event::Refused(r) => format!("{}: {} (on {})", r.reason, r.detail, r.subject),
            Event::Progress(p) => p.describe(),
            Event::CancelRequested(c) => format!(
                "its client asks to cancel it: \"{}\"",
                airlock_protocol::text::visible_line(&c.reason)
            ),
            Event::ChatRefused(c) => format!(
                "{} refused {} for good{}: {}",
                c.system,
                if c.whole_chat {
                    "the request's message"
                } else {
                    "its escalation"
                },
                c.place.as_ref().map(|p| format!(" in {p}")).unwrap_or_default(),
                airlock_protocol::text::visible_line(&c.detail)
            ),
            Event::ApprovalRevoked(r) => format!(
                "remembered approval {} (execution {}) revoked by {}: {}",
                r.id, r.execution_digest, r.who, r.reason
            ),
        })
    }
}

fn describe_request(r: &ExecutionRequest) -> String {
    let mut line = format!(
        "{} {} trust={} {}",
        r.language.as_str(),
        serde_plain(&r.origin),
        r.trust.as_str(),
        r.label.as_deref().unwrap_or("")
    );
    if !r.inputs.args.is_empty() {
        line.push_str(&format!(" args={:?}", r.inputs.args));
    }
    if !r.inputs.env.is_empty() {
        line.push_str(&format!(" env={:?}", r.inputs.env));
    }
    if !r.packages.is_empty() {
        line.push_str(&format!(" packages={}", r.packages.join(",")));
    }
    line
}

fn describe_assessment(assessment: &Assessment) -> String {
    let mut text = format!("{} ({} findings)", assessment.level.as_str(), assessment.findings.len());
    for f in &assessment.findings {
        text.push_str(&format!(
            "\n    line {} {} {} `{}`: {}",
            f.line,
            f.severity.as_str(),
            f.rule_id,
            f.snippet.trim(),
            f.explanation.trim()
        ));
    }
    text
}

fn describe_terminal(t: &Terminal) -> String {
    let mut line = t.outcome.as_str().to_owned();
    if let Some(code) = t.exit_code {
        line.push_str(&format!(", exit {code}"));
    }
    if let Some(v) = &t.violation {
        line.push_str(&format!(", {} limit violated: {}", v.kind.as_str(), v.detail));
    }
    if let Some(refusal) = t.refusal {
        line.push_str(&format!(", refused ({refusal})"));
    }
    if let Some(reason) = &t.reason {
        line.push_str(&format!(": {reason}"));
    }
    if let Some(u) = t.usage {
        line.push_str(&format!(
            "\n    {} ms, {} ms CPU, peak {} KiB, {} processes",
            u.wall_ms,
            u.cpu_ms,
            u.peak_memory_bytes / 1024,
            u.peak_pids
        ));
    }
    for (name, bytes) in [("stdout", &t.stdout), ("stderr", &t.stderr)] {
        if !bytes.is_empty() {
            line.push_str(&format!("\n    --- {name} ---"));
            for l in String::from_utf8_lossy(bytes).lines() {
                line.push_str(&format!("\n    | {l}"));
            }
        }
    }
    line
}

fn describe_decision(decision: &Decision) -> String {
    let who = match &decision.approver {
        Approver::Policy { rule } => format!("by policy ({rule})"),
        Approver::Human {
            who,
            reason,
            via,
            seconded_by,
            ..
        } => {
            let place = via.as_deref().map(|v| format!(" in {v}")).unwrap_or_default();
            let seconds: String = seconded_by
                .iter()
                .map(|c| format!("; seconded by {}: {}", c.who, c.reason))
                .collect();
            format!("by {who}{place}: {reason}{seconds}")
        }
        Approver::Deadline => "by the deadline: nobody answered".to_owned(),
        Approver::Remembered {
            who,
            reason,
            approved_request,
            until_ms,
            ..
        } => format!(
            "again, as {who} approved this exact code for {approved_request} ({reason}; remembered until {})",
            humantime_ms(*until_ms)
        ),
    };
    match &decision.outcome {
        DecisionOutcome::Approved {
            quota,
            limits,
            runtime,
            network,
            read_only_hosts,
        } => format!(
            "approved {who}; quota {} ({}), runtime {}, network {}{}, valid until {}; execution {}",
            quota.as_str(),
            describe_limits(limits),
            runtime.as_str(),
            network.as_str(),
            if read_only_hosts.is_empty() {
                String::new()
            } else {
                format!(" ({})", read_only_hosts.join(", "))
            },
            humantime_ms(decision.expires_at_ms),
            decision.execution_digest
        ),
        DecisionOutcome::Denied { reason } => format!("denied {who}: {reason}"),
    }
}

fn describe_limits(l: &Limits) -> String {
    format!(
        "{} CPU, {} MiB, {} s, {} processes, {} KiB output, {} MiB disk",
        l.cpu_millis as f64 / 1000.0,
        l.memory_bytes >> 20,
        l.wall_ms as f64 / 1000.0,
        l.pids,
        l.output_bytes >> 10,
        l.disk_bytes >> 20
    )
}

/// Byte fields of events, which JSON would show as lists of numbers.
const BYTE_FIELDS: [&str; 7] = ["code", "stdin", "data", "stdout", "stderr", "payload", "signature"];

/// Shows byte fields as text when they are UTF-8, else as `{"base64": ...}`.
fn readable_bytes(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let bytes: Option<Vec<u8>> = BYTE_FIELDS
                        .contains(&k.as_str())
                        .then(|| v.as_array())
                        .flatten()
                        .and_then(|a| {
                            a.iter()
                                .map(|n| n.as_u64().and_then(|n| u8::try_from(n).ok()))
                                .collect()
                        });
                    match bytes {
                        Some(bytes) => (k, text_or_base64(&bytes)),
                        None => (k, readable_bytes(v)),
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(readable_bytes).collect()),
        other => other,
    }
}

fn serde_plain<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn text_or_base64(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!(text),
        Err(_) => {
            use base64::Engine as _;
            json!({ "base64": base64::engine::general_purpose::STANDARD.encode(bytes) })
        }
    }
}

/// An instant as RFC 3339 with milliseconds (UTC).
fn humantime_ms(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(time).to_string()
}

/// Replays entries `filter.from_seq..size` of the log as of its current checkpoint (read, not
/// verified: `verify` is the integrity check).
pub async fn replay(reader: &LogReader, filter: &Filter) -> Result<(u64, Vec<ReplayItem>), ReadError> {
    let Some((signed, _)) = reader.checkpoint().await? else {
        return Ok((0, Vec::new()));
    };
    let size = signed.checkpoint.size;
    // Code of every submitted request seen so far, for diffs of later revisions.
    let mut code_of: HashMap<String, BlobRef> = HashMap::new();
    let scan_from = if filter.request.is_some() { 0 } else { filter.from_seq };
    let mut items = Vec::new();
    let mut blob_cache: HashMap<String, Option<Vec<u8>>> = HashMap::new();
    let step = 256 * 64;
    let mut from = scan_from;
    while from < size {
        let to = (from + step).min(size);
        for (seq, entry) in reader.entries(from, to, size).await? {
            let revises = match &entry.event {
                Some(Event::Submitted(r)) => r.revises.as_ref().map(|id| id.as_str().to_owned()),
                _ => None,
            };
            if entry.kind == "submitted"
                && let Some(code) = entry.blobs.get("code")
            {
                code_of.insert(entry.request_id.clone(), code.clone());
            }
            if seq < filter.from_seq || !filter.matches(&entry) {
                continue;
            }
            let mut content = Vec::new();
            for (slot, blob) in &entry.blobs {
                let bytes = fetch(reader, &mut blob_cache, blob).await?;
                content.push((slot.clone(), bytes));
            }
            let event = entry.restore(|r| {
                content
                    .iter()
                    .find(|(slot, _)| entry.blobs.get(slot) == Some(r))
                    .and_then(|(_, b)| b.clone())
            });
            let diff = match revises {
                Some(old_id) => {
                    let old = match code_of.get(&old_id) {
                        Some(blob) => fetch(reader, &mut blob_cache, &blob.clone()).await?,
                        None => None,
                    };
                    let new = content.iter().find(|(s, _)| s == "code").and_then(|(_, b)| b.clone());
                    Some((old_id, unified_diff(old.as_deref(), new.as_deref())))
                }
                None => None,
            };
            items.push(ReplayItem {
                seq,
                entry,
                event,
                content,
                diff,
            });
        }
        from = to;
    }
    Ok((size, items))
}

async fn fetch(
    reader: &LogReader,
    cache: &mut HashMap<String, Option<Vec<u8>>>,
    blob: &BlobRef,
) -> Result<Option<Vec<u8>>, ReadError> {
    if let Some(hit) = cache.get(&blob.b3) {
        return Ok(hit.clone());
    }
    let bytes = reader.blob(blob).await?;
    if cache.len() > 1024 {
        cache.clear();
    }
    cache.insert(blob.b3.clone(), bytes.clone());
    Ok(bytes)
}

pub fn unified_diff(old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let (Some(old), Some(new)) = (old, new) else {
        return "(the code of one side is not in the log, or was pruned)\n".to_owned();
    };
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header("revised", "revision")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(event: Event) -> ReplayItem {
        let envelope = airlock_protocol::Envelope::new(
            airlock_protocol::RequestId::parse("r1").unwrap(),
            airlock_protocol::Producer::Executor,
            event.clone(),
        );
        let prepared = crate::entry::Prepared::from_envelope(envelope, Some(1), None);
        ReplayItem {
            seq: 1,
            entry: prepared.entry,
            event: Some(event),
            content: vec![],
            diff: None,
        }
    }

    #[test]
    fn text_shows_escapes_in_output_and_code_instead_of_obeying_them() {
        use airlock_protocol::*;
        let mut output = item(Event::Output(OutputChunk {
            stream: OutputStream::Stdout,
            seq: 0,
            data: b"copied\x1b]52;c;ZXZpbA==\x07 \x1b[2J\r\xe2\x80\xae done\n".to_vec(),
        }));
        output.content = vec![(
            "code".into(),
            Some(b"print(1)  # \xe2\x81\xa6hidden\xe2\x81\xa9\n".to_vec()),
        )];
        let text = output.to_text();
        assert!(
            !text.contains('\u{1b}')
                && !text.contains('\r')
                && !text.contains('\u{202E}')
                && !text.contains('\u{2066}'),
            "{text:?}"
        );
        assert!(text.contains("⟨U+001B⟩]52;c;ZXZpbA==⟨U+0007⟩"), "{text}");
        assert!(
            text.contains("⟨U+202E⟩") && text.contains("⟨U+2066⟩hidden⟨U+2069⟩"),
            "{text}"
        );
    }

    /// Text mode tells the whole story: small output chunks, who answered and why, what a
    /// decision grants and until when, exit codes as numbers; no Rust debug forms.
    #[test]
    fn text_shows_every_event_in_full() {
        use airlock_protocol::*;
        let key = SigningKey::generate("airlock.test/gate").unwrap();
        let limits = Quotas::default().for_level(TrustLevel::Untrusted);
        let decision = Decision {
            decision_id: MessageId::new(),
            request_id: RequestId::parse("r1").unwrap(),
            execution_digest: CodeDigest::of(b"y"),
            code_digest: CodeDigest::of(b"x"),
            level: Level::Blocked,
            outcome: DecisionOutcome::Approved {
                quota: TrustLevel::Untrusted,
                limits,
                runtime: Runtime::Runc,
                network: NetworkMode::None,
                read_only_hosts: vec![],
            },
            approver: Approver::Human {
                who: "@alice:localhost".into(),
                reason: "reviewed the download".into(),
                key: "k".into(),
                via: Some("matrix !room:localhost".into()),
                seconded_by: vec![airlock_protocol::decision::CoApprover {
                    who: "@bob:localhost".into(),
                    reason: "agreed".into(),
                    via: None,
                }],
            },
            issued_at_ms: 0,
            expires_at_ms: 1_700_000_000_000,
            policy_version: None,
        };
        let decided = item(Event::Decided(Box::new(Decided {
            signed: Signed::sign(&decision, airlock_protocol::decision::DECISION_DOMAIN, &key),
            request: None,
            assessment: None,
        })))
        .to_text();
        for needle in [
            "approved by @alice:localhost in matrix !room:localhost: reviewed the download; seconded by @bob:localhost: agreed",
            "quota untrusted",
            "2023-11-14T22:13:20",
        ] {
            assert!(decided.contains(needle), "{needle} not in {decided}");
        }
        let answer = OverrideAnswer {
            request_id: RequestId::parse("r1").unwrap(),
            execution_digest: CodeDigest::of(b"x"),
            approve: false,
            reason: "no downloads today".into(),
            who: "bob".into(),
            answered_at_ms: 0,
            via: None,
            approve_again_for_ms: None,
            refused_at_edge: None,
        };
        let answered = item(Event::OverrideAnswered(OverrideAnswered {
            signed: Signed::sign(&answer, airlock_protocol::overrides::ANSWER_DOMAIN, &key),
        }))
        .to_text();
        assert!(
            answered.contains("denied by bob") && answered.contains("no downloads today"),
            "{answered}"
        );
        let output = item(Event::Output(OutputChunk {
            stream: OutputStream::Stdout,
            seq: 0,
            data: b"hi\n".to_vec(),
        }))
        .to_text();
        assert!(output.contains("stdout #0: hi"), "{output}");
        let mut terminal = Terminal::without_run(Outcome::Finished, "done");
        terminal.exit_code = Some(3);
        let ended = item(Event::Terminal(Box::new(terminal))).to_text();
        assert!(ended.contains("finished, exit 3"), "{ended}");
        for text in [&decided, &answered, &output, &ended] {
            assert!(!text.contains("Some(") && !text.contains("None"), "{text}");
        }
    }

    #[test]
    fn dates_and_diffs() {
        assert_eq!(humantime_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(humantime_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        let d = unified_diff(Some(b"a\nb\n"), Some(b"a\nc\n"));
        assert!(d.contains("-b") && d.contains("+c"), "{d}");
    }
}

/// Reads a `--since` value: Unix milliseconds, a duration back from `now_ms` (`90s`, `30m`,
/// `2h`, `7d`), or a UTC date `YYYY-MM-DD` with an optional `THH:MM[:SS][Z]`.
pub fn parse_since(text: &str, now_ms: i64) -> Option<i64> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return Some(ms);
    }
    if let Ok(back) = humantime::parse_duration(text) {
        return Some(now_ms - i64::try_from(back.as_millis()).ok()?);
    }
    // A date, a date and minutes, or a full time: completed to what RFC 3339 wants.
    let text = text.strip_suffix('Z').unwrap_or(text);
    let full = match text.len() {
        10 => format!("{text}T00:00:00Z"),
        16 => format!("{text}:00Z"),
        _ => format!("{text}Z"),
    };
    let time = humantime::parse_rfc3339_weak(&full).ok()?;
    let since_epoch = time.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since_epoch.as_millis()).ok()
}

#[cfg(test)]
mod since_tests {
    use super::*;

    #[test]
    fn since_values() {
        assert_eq!(parse_since("1700000000123", 0), Some(1_700_000_000_123));
        assert_eq!(parse_since("2h", 10_000_000), Some(10_000_000 - 7_200_000));
        assert_eq!(parse_since("2023-11-14T22:13:20Z", 0), Some(1_700_000_000_000));
        assert_eq!(parse_since("1970-01-02", 0), Some(86_400_000));
        assert_eq!(parse_since("yesterday", 0), None);
        assert_eq!(parse_since("2023-13-01", 0), None);
    }
}
