//! Reading the log as a story: entries in order, filtered by request, kind and time, with their
//! blobs put back, a request's code, and the diff to the request it revises. The diff is
//! computed here from the two code blobs rather than stored: both are in the log already, and
//! a stored diff would add nothing a verifier could check.

use crate::entry::{BlobRef, Entry};
use crate::reader::{LogReader, ReadError};
use airlock_protocol::Event;
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
            "content": content,
            "prev": self.entry.prev.to_hex(),
        });
        if let Some((revises, diff)) = &self.diff {
            value["revises"] = json!(revises);
            value["diff"] = json!(diff);
        }
        value
    }

    /// One or more lines for people.
    pub fn to_text(&self) -> String {
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
        if let Some((revises, diff)) = &self.diff {
            out.push_str(&format!("  --- diff against {revises} ---\n"));
            for line in diff.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }

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
        let text = |slot: &str| {
            self.content
                .iter()
                .find(|(s, _)| s == slot)
                .and_then(|(_, b)| b.as_ref())
                .map(|b| String::from_utf8_lossy(b).trim_end().to_owned())
        };
        Some(match self.event.as_ref()? {
            Event::Submitted(r) => format!(
                "{} {} trust={} {}",
                r.language.as_str(),
                serde_plain(&r.origin),
                r.trust.as_str(),
                r.label.as_deref().unwrap_or("")
            ),
            Event::Assessed(a) => format!(
                "{} ({} findings)",
                a.assessment.level.as_str(),
                a.assessment.findings.len()
            ),
            Event::OverrideAsked(o) => format!("{}: {}", o.level.as_str(), o.explanation),
            Event::Decided(_) => "signed decision".to_owned(),
            Event::Output(c) => format!("{:?} #{}: {}", c.stream, c.seq, text("data").unwrap_or_default()),
            Event::Terminal(t) => format!(
                "{} exit={:?}{}{}",
                t.outcome.as_str(),
                t.exit_code,
                t.violation
                    .as_ref()
                    .map(|v| format!(" violation={}", v.kind.as_str()))
                    .unwrap_or_default(),
                t.reason.as_ref().map(|r| format!(" reason={r}")).unwrap_or_default()
            ),
            Event::Refused(r) => format!("{}: {}", serde_plain(&r.reason), r.detail),
            other => serde_json::to_string(other)
                .unwrap_or_default()
                .chars()
                .take(160)
                .collect(),
        })
    }
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

fn humantime_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
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
    if let Some(unit) = text.chars().last().filter(|c| c.is_ascii_alphabetic())
        && let Ok(n) = text[..text.len() - 1].parse::<i64>()
    {
        let scale = match unit {
            's' => 1_000,
            'm' => 60_000,
            'h' => 3_600_000,
            'd' => 86_400_000,
            _ => return None,
        };
        return Some(now_ms - n * scale);
    }
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = text.split_once('T').unwrap_or((text, "00:00:00"));
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (Some(Some(y)), Some(Some(m)), Some(Some(day)), None) = (d.next(), d.next(), d.next(), d.next()) else {
        return None;
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (Some(Some(hh)), Some(Some(mm))) = (t.next(), t.next()) else {
        return None;
    };
    let ss = match t.next() {
        None => 0,
        Some(Some(s)) => s,
        Some(None) => return None,
    };
    Some((days_from_civil(y, m, day) * 86_400 + hh * 3600 + mm * 60 + ss) * 1000)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
