//! The files under `out/` of a run under gVisor, as PID 1 sends them behind its sealed end.
//!
//! Under runc the executor reads `out/` itself, from the host ([`crate::outputs`]). Under gVisor
//! the files live in gVisor's own kernel, which the host cannot read; PID 1 (root inside gVisor,
//! another user than the program) reads them once every process of the program is gone, with
//! the same bounds and the same care (no link followed, nothing but regular files opened, and
//! without blocking), and writes them on stdout right behind its end marker and the exit status
//! (`_files_section` in `bootstrap.py`). Only PID 1 knows the seal's token, so only PID 1 can
//! write behind that marker; the program is gone by then, so nothing follows it.
//!
//! The section: ten ASCII digits, the length of the rest; then per file eight digits, the
//! length of a JSON header (name, size, SHA-256, whether the bytes behind it are the whole
//! content or only its head, and why not), then those bytes. Nothing in it is taken on trust
//! beyond its author: every bound the host applies under runc is checked again here, the
//! digest of returned content is computed here, and a section that breaks any rule returns no
//! files at all (the result says why) rather than some of them.

use airlock_protocol::files::{
    MAX_FILE_DEPTH, MAX_FILE_NAME_BYTES, MAX_OUTPUT_FILE_BYTES, MAX_OUTPUT_FILES, MAX_OUTPUT_FILES_BYTES, media_type,
};
use airlock_protocol::{CodeDigest, OutputFile};
use serde::Deserialize;

/// The section's length field.
const LENGTH_DIGITS: usize = 10;
/// Each file's header length field.
const HEADER_DIGITS: usize = 8;
/// The longest header (a name of at most 8 components of 200 bytes, JSON-escaped, and the rest).
const MAX_HEADER: usize = 16 * 1024;
/// The bytes of a file's head sent when its content is not (for its media type).
const MAX_HEAD: usize = 512;
/// The longest section: every file returned, plus a header and a head for each.
pub const MAX_SECTION: usize =
    MAX_OUTPUT_FILES_BYTES as usize + MAX_OUTPUT_FILES * (HEADER_DIGITS + MAX_HEADER + MAX_HEAD);

/// Why a section is not the files.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SectionError {
    #[error("PID 1's files section is malformed: {0}")]
    Malformed(&'static str),
    #[error("PID 1's files section breaks a bound: {0}")]
    Bound(String),
    #[error("PID 1's files section is inconsistent: {0}")]
    Inconsistent(String),
}

/// How long the whole section is, once its length field is in (`None` before): the executor
/// reads that many bytes behind the status. A length past [`MAX_SECTION`] is no section: only
/// the field itself is waited for, and [`parse`] refuses it.
pub fn wanted(section: &[u8]) -> Option<usize> {
    wanted_at_most(section, MAX_SECTION)
}

/// [`wanted`] for a section of at most `max` bytes.
fn wanted_at_most(section: &[u8], max: usize) -> Option<usize> {
    let digits = section.get(..LENGTH_DIGITS)?;
    Some(match number(digits) {
        Some(len) if len <= max => LENGTH_DIGITS + len,
        _ => LENGTH_DIGITS,
    })
}

/// What PID 1 writes behind a sealed end's status, in order: the files, then the program's own
/// report (its audit hook's lines, which gVisor keeps from the host's view). Each is ten digits
/// of length and that many bytes.
pub struct Tail<'a> {
    pub files: &'a [u8],
    pub report: &'a [u8],
}

/// How many bytes the tail takes, as far as its length fields are in; `complete` once all are.
pub fn tail_wanted(tail: &[u8]) -> (usize, bool) {
    let Some(files) = wanted(tail) else {
        return (LENGTH_DIGITS, false);
    };
    match tail
        .get(files..)
        .and_then(|rest| wanted_at_most(rest, crate::activity::MAX_ACTIVITY_BYTES))
    {
        Some(report) => (files + report, true),
        None => (files + LENGTH_DIGITS, false),
    }
}

/// The tail's two sections, once all of it came.
pub fn split_tail(tail: &[u8]) -> Option<Tail<'_>> {
    let (len, complete) = tail_wanted(tail);
    if !complete || tail.len() < len {
        return None;
    }
    let files_len = wanted(tail)?;
    Some(Tail {
        files: &tail[..files_len],
        report: tail.get(files_len + LENGTH_DIGITS..len)?,
    })
}

fn number(digits: &[u8]) -> Option<usize> {
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    name: String,
    size: u64,
    sha256: String,
    /// The bytes behind are the whole content (else at most its head).
    content: bool,
    omitted: Option<String>,
    /// How many bytes follow the header.
    bytes: usize,
}

/// The files of a complete section.
pub fn parse(section: &[u8]) -> Result<Vec<OutputFile>, SectionError> {
    let len = section
        .get(..LENGTH_DIGITS)
        .and_then(number)
        .ok_or(SectionError::Malformed("no length"))?;
    if len > MAX_SECTION {
        return Err(SectionError::Bound(format!("{len} bytes, past {MAX_SECTION}")));
    }
    let mut rest = section
        .get(LENGTH_DIGITS..LENGTH_DIGITS + len)
        .ok_or(SectionError::Malformed("shorter than its length"))?;
    let mut files = Vec::new();
    let mut returned = 0u64;
    while !rest.is_empty() {
        if files.len() >= MAX_OUTPUT_FILES {
            return Err(SectionError::Bound(format!("more than {MAX_OUTPUT_FILES} files")));
        }
        let header_len = rest
            .get(..HEADER_DIGITS)
            .and_then(number)
            .filter(|n| *n <= MAX_HEADER)
            .ok_or(SectionError::Malformed("a file without its header length"))?;
        let header_bytes = rest
            .get(HEADER_DIGITS..HEADER_DIGITS + header_len)
            .ok_or(SectionError::Malformed("a header cut short"))?;
        let header: Header =
            serde_json::from_slice(header_bytes).map_err(|_| SectionError::Malformed("a header that is not one"))?;
        rest = &rest[HEADER_DIGITS + header_len..];
        check_name(&header.name)?;
        let data_len = header.bytes;
        let expected = if header.content {
            u64::try_from(data_len).ok() == Some(header.size)
        } else {
            data_len <= MAX_HEAD && data_len as u64 <= header.size
        };
        if !expected {
            return Err(SectionError::Inconsistent(format!(
                "{}: {data_len} bytes sent",
                header.name
            )));
        }
        let data = rest
            .get(..data_len)
            .ok_or(SectionError::Malformed("content cut short"))?;
        rest = &rest[data_len..];
        files.push(file(header, data, &mut returned)?);
    }
    Ok(files)
}

/// A name as the walk from the host makes them: a relative path of plain components, at most
/// as deep as the walk goes.
fn check_name(name: &str) -> Result<(), SectionError> {
    let parts: Vec<&str> = name.split('/').collect();
    let plain = parts
        .iter()
        .all(|p| !p.is_empty() && *p != "." && *p != ".." && p.len() <= MAX_FILE_NAME_BYTES && !p.contains('\0'));
    if !plain || parts.len() > MAX_FILE_DEPTH {
        return Err(SectionError::Bound(format!("the name {name:?}")));
    }
    Ok(())
}

fn file(header: Header, data: &[u8], returned: &mut u64) -> Result<OutputFile, SectionError> {
    let Header {
        name,
        size,
        sha256,
        content,
        omitted,
        bytes: _,
    } = header;
    let media = media_type(&name, &data[..data.len().min(MAX_HEAD)]);
    if content {
        if omitted.is_some() || size > MAX_OUTPUT_FILE_BYTES || *returned + size > MAX_OUTPUT_FILES_BYTES {
            return Err(SectionError::Bound(format!("{name}: {size} bytes returned")));
        }
        let digest = CodeDigest::of(data);
        if digest.as_str().strip_prefix("sha256:") != Some(sha256.as_str()) {
            return Err(SectionError::Inconsistent(format!(
                "{name}: its digest is not of its content"
            )));
        }
        *returned += size;
        return Ok(OutputFile {
            name,
            size,
            sha256: digest,
            media_type: media.to_owned(),
            content: data.to_vec(),
            omitted: None,
        });
    }
    let why = match omitted.as_deref() {
        Some("over_file") if size > MAX_OUTPUT_FILE_BYTES => crate::outputs::over_file(size),
        Some("over_total") if size <= MAX_OUTPUT_FILE_BYTES => crate::outputs::over_total(),
        Some("undigested") if sha256.is_empty() => crate::outputs::undigested(size),
        Some(other) if other.starts_with("unreadable: ") && sha256.is_empty() => {
            let cause: String = other["unreadable: ".len()..].chars().take(200).collect();
            format!("could not be read: {cause}")
        }
        _ => {
            return Err(SectionError::Inconsistent(format!(
                "{name}: left out without a known reason"
            )));
        }
    };
    let digest = if sha256.is_empty() {
        CodeDigest::of(b"")
    } else {
        CodeDigest::parse(&format!("sha256:{sha256}")).map_err(|_| SectionError::Malformed("a digest"))?
    };
    let media = if sha256.is_empty() {
        "application/octet-stream"
    } else {
        media
    };
    Ok(OutputFile {
        name,
        size,
        sha256: digest,
        media_type: media.to_owned(),
        content: Vec::new(),
        omitted: Some(why),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(header: serde_json::Value, data: &[u8]) -> Vec<u8> {
        let header = header.to_string();
        [format!("{:08}", header.len()).as_bytes(), header.as_bytes(), data].concat()
    }

    fn section(entries: &[Vec<u8>]) -> Vec<u8> {
        let body = entries.concat();
        [format!("{:010}", body.len()).into_bytes(), body].concat()
    }

    fn returned(name: &str, data: &[u8]) -> Vec<u8> {
        let sha = CodeDigest::of(data).as_str().trim_start_matches("sha256:").to_owned();
        entry(
            serde_json::json!({"name": name, "size": data.len(), "sha256": sha, "content": true, "omitted": null, "bytes": data.len()}),
            data,
        )
    }

    #[test]
    fn a_section_reads_as_the_files_with_their_digests_types_and_reasons() {
        let big_sha = "ab".repeat(32);
        let s = section(&[
            returned("chart.png", b"\x89PNG\r\n\x1a\nxx"),
            returned("tables/summary.csv", b"a,b\n"),
            entry(
                serde_json::json!({"name": "big.bin", "size": 5_000_000, "sha256": big_sha, "content": false, "omitted": "over_file", "bytes": 4}),
                b"head",
            ),
        ]);
        assert_eq!(wanted(&s), Some(s.len()));
        let files = parse(&s).unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(
            (files[0].media_type.as_str(), files[1].content.as_slice()),
            ("image/png", &b"a,b\n"[..])
        );
        assert_eq!(files[2].sha256.as_str(), format!("sha256:{big_sha}"));
        assert_eq!(files[2].omitted, Some(crate::outputs::over_file(5_000_000)));
        assert!(files[2].content.is_empty());
        assert_eq!(parse(&section(&[])).unwrap(), vec![]);
    }

    #[test]
    fn a_section_that_breaks_a_rule_returns_no_files() {
        let lying_digest = entry(
            serde_json::json!({"name": "a", "size": 2, "sha256": "00".repeat(32), "content": true, "omitted": null, "bytes": 2}),
            b"hi",
        );
        let too_big = entry(
            serde_json::json!({"name": "a", "size": 2_000_000, "sha256": "", "content": true, "omitted": null, "bytes": 2_000_000}),
            &vec![0; 2_000_000],
        );
        let no_reason = entry(
            serde_json::json!({"name": "a", "size": 2, "sha256": "", "content": false, "omitted": "because", "bytes": 0}),
            b"",
        );
        let head_too_long = entry(
            serde_json::json!({"name": "a", "size": 9000, "sha256": "ab".repeat(32), "content": false, "omitted": "over_total", "bytes": 600}),
            &[0; 600],
        );
        let unknown_field = entry(
            serde_json::json!({"name": "a", "size": 0, "sha256": "", "content": true, "omitted": null, "bytes": 0, "path": "/etc"}),
            b"",
        );
        for (bad, why) in [
            (section(&[returned("../etc/passwd", b"x")]), "a name that leaves out/"),
            (section(&[returned("/etc/passwd", b"x")]), "an absolute name"),
            (section(&[returned("a/./b", b"x")]), "a dot component"),
            (section(&[returned(&"d/".repeat(8).to_string(), b"x")]), "too deep"),
            (section(&[lying_digest]), "a digest not of the content"),
            (section(&[too_big]), "content past the file bound"),
            (section(&[no_reason]), "an unknown reason"),
            (section(&[head_too_long]), "a head longer than a head"),
            (section(&[unknown_field]), "an unknown field"),
            (
                section(&vec![returned("a", b""); MAX_OUTPUT_FILES + 1]),
                "too many files",
            ),
            (b"00000000x9".to_vec(), "a length that is not digits"),
            (b"0000000010abc".to_vec(), "shorter than its length"),
        ] {
            assert!(parse(&bad).is_err(), "{why}");
        }
        // Three files of a MiB each pass the total: the section breaks the bound.
        let mib = vec![7u8; 1024 * 1024];
        let over = section(&[returned("a", &mib), returned("b", &mib), returned("c", &mib)]);
        assert!(matches!(parse(&over), Err(SectionError::Bound(_))));
        // The tail: the files, then the program's report, each waited for by its length.
        let files = section(&[returned("a", b"x")]);
        let tail = [files.clone(), b"0000000003abc".to_vec()].concat();
        assert_eq!(tail_wanted(&files), (files.len() + LENGTH_DIGITS, false));
        assert_eq!(tail_wanted(&tail), (tail.len(), true));
        let split = split_tail(&tail).unwrap();
        assert_eq!((split.files, split.report), (files.as_slice(), &b"abc"[..]));
        // A report longer than the host would read is not waited for: an empty one.
        let long = [files.clone(), b"0000099999".to_vec()].concat();
        assert_eq!(tail_wanted(&long), (long.len(), true));
        assert!(split_tail(&long).is_some_and(|t| t.report.is_empty()));
        // A length past the bound is not waited for.
        assert_eq!(wanted(b"9999999999"), Some(LENGTH_DIGITS));
        assert_eq!(wanted(b"00000"), None);
    }
}
