//! How CPython decodes a Python source: the UTF-8 byte order mark and the PEP 263 coding cookie,
//! found and normalised exactly as CPython 3.11's tokenizer does (the sandbox's interpreter:
//! `compile(code, "main.py", "exec")` on the request's bytes).
//!
//! Why this matters: a cookie such as `# -*- coding: utf-7 -*-` makes CPython decode `+AAo-`
//! inside a comment as a newline, so a reader that assumes UTF-8 sees a comment where the
//! interpreter runs a statement. Whoever rates, shows, signs or runs a program reads it through
//! [`python_source_encoding`], so they all read the same text.
//!
//! What CPython does, step by step (`Parser/tokenizer.c`: `check_bom`, `check_coding_spec`,
//! `get_coding_spec`, `get_normal_name`; checked against the interpreter by the tests below):
//! - Source with a NUL byte is refused before anything else ("source code string cannot contain
//!   null bytes").
//! - A leading `EF BB BF` is a UTF-8 byte order mark: it is dropped and the source is UTF-8.
//! - Lines end at `\n`, `\r\n` or a lone `\r`. Line 1 is searched for a cookie; line 2 only when
//!   line 1 is blank or a comment (spaces, tabs and form feeds, then `#` or nothing).
//! - A cookie is in a comment that is alone on its line: only spaces, tabs and form feeds before
//!   the `#`; after it, the first `coding` (case matters) followed by `:` or `=`, optional spaces
//!   or tabs, and a non-empty name of ASCII letters, digits, `-`, `_` and `.` (an occurrence
//!   without a name is skipped for the next). `fileencoding=` and `encoding:` contain `coding=`
//!   and `coding:`, so Vim's and Emacs's forms are cookies too.
//! - The name is normalised on its first 12 characters, lower-cased with `_` read as `-`:
//!   `utf-8` and `utf-8-…` become `utf-8`; `latin-1`, `iso-8859-1`, `iso-latin-1` and their
//!   `…-` forms become `iso-8859-1`; any other name is kept as written.
//! - With a byte order mark, a cookie whose normalised name is not exactly `utf-8` is an error
//!   ("encoding problem: iso-8859-1 with BOM"; also for `utf8`, which is not normalised).
//! - Without a mark, a cookie other than `utf-8` makes CPython decode the whole source with that
//!   codec (looked up in Python's codec registry, aliases included: `utf8`, `latin1`, `l1`,
//!   `us-ascii`, ...). Without a cookie, or with `utf-8`, the source is UTF-8: `python3 FILE`
//!   refuses invalid UTF-8 anywhere; `compile()` tolerates it inside comments only, where it
//!   changes nothing. Here invalid UTF-8 is [`Undecodable::NotUtf8`] either way.

use std::borrow::Cow;

/// The UTF-8 byte order mark.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// A PEP 263 coding cookie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cookie {
    /// The encoding's name as CPython's tokenizer normalises it (`iso-8859-1` for
    /// `latin_1`, `utf-8` for `UTF_8`; other names as written).
    pub name: String,
    /// The line it is on: 1 or 2.
    pub line: u8,
}

/// The Python codec a cookie's name resolves to, among those Airlock can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Utf8,
    Ascii,
    Latin1,
    /// Any other name: a codec Airlock does not decode (or none at all).
    Other,
}

/// How CPython will decode a Python source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceEncoding {
    /// UTF-8 (and valid UTF-8): no cookie, a cookie naming UTF-8, or a byte order mark (which
    /// CPython drops).
    Utf8 { bom: bool, cookie: Option<Cookie> },
    /// A cookie names another codec; CPython decodes the whole source with it. For `Ascii` the
    /// bytes are known to be ASCII; `Latin1` decodes any bytes.
    Declared { cookie: Cookie, codec: Codec },
    /// CPython refuses the source before it runs any of it.
    Invalid(Undecodable),
}

/// A source CPython refuses to decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Undecodable {
    #[error("the code contains a NUL byte (line {line}); Python refuses source code with NUL bytes")]
    NulByte { line: u32 },
    #[error(
        "the code starts with a UTF-8 byte order mark but line {line} declares the encoding {name}; Python refuses it (\"encoding problem: {name} with BOM\")"
    )]
    BomConflict { name: String, line: u8 },
    #[error("line {line} is not valid UTF-8 and no other encoding is declared; Python refuses it (PEP 263)")]
    NotUtf8 { line: u32 },
    #[error(
        "line {line} has a byte that is not ASCII (0x{byte:02x}), the encoding the code declares; Python refuses it"
    )]
    NotAscii { line: u32, byte: u8 },
}

/// Why a Python source cannot be read as the interpreter would read it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceRefusal {
    #[error(transparent)]
    Undecodable(#[from] Undecodable),
    #[error(
        "line {} declares the source encoding {:?}; Airlock reads Python source only as UTF-8, ASCII or Latin-1, and could not assess what Python would run", .0.line, .0.name
    )]
    UnsupportedEncoding(Cookie),
}

impl SourceEncoding {
    /// The codec's name for records and digests: `utf-8`, `ascii`, `latin-1`, or the cookie's
    /// name for any other codec. `None` when CPython refuses the source.
    pub fn codec_name(&self) -> Option<&str> {
        match self {
            SourceEncoding::Utf8 { .. } => Some("utf-8"),
            SourceEncoding::Declared {
                codec: Codec::Ascii, ..
            } => Some("ascii"),
            SourceEncoding::Declared {
                codec: Codec::Latin1, ..
            } => Some("latin-1"),
            SourceEncoding::Declared { cookie, .. } => Some(&cookie.name),
            SourceEncoding::Invalid(_) => None,
        }
    }

    /// The text CPython's tokenizer reads from `code` (the byte order mark dropped), for the
    /// codecs Airlock reads; otherwise why not. `code` must be what this encoding was found in.
    pub fn text<'a>(&self, code: &'a [u8]) -> Result<Cow<'a, str>, SourceRefusal> {
        match self {
            SourceEncoding::Utf8 { bom, .. } => {
                let body = if *bom { &code[UTF8_BOM.len()..] } else { code };
                std::str::from_utf8(body).map(Cow::Borrowed).map_err(|e| {
                    Undecodable::NotUtf8 {
                        line: line_of(body, e.valid_up_to()),
                    }
                    .into()
                })
            }
            SourceEncoding::Declared {
                codec: Codec::Ascii, ..
            } => match std::str::from_utf8(code) {
                Ok(text) if text.is_ascii() => Ok(Cow::Borrowed(text)),
                _ => Err(not_ascii(code).into()),
            },
            SourceEncoding::Declared {
                codec: Codec::Latin1, ..
            } => {
                Ok(match std::str::from_utf8(code) {
                    Ok(text) if text.is_ascii() => Cow::Borrowed(text),
                    // Latin-1 maps each byte to the code point of the same value.
                    _ => Cow::Owned(code.iter().map(|&b| char::from(b)).collect()),
                })
            }
            SourceEncoding::Declared { cookie, .. } => Err(SourceRefusal::UnsupportedEncoding(cookie.clone())),
            SourceEncoding::Invalid(why) => Err(why.clone().into()),
        }
    }
}

/// How CPython will decode `code` as a Python source. Pure and linear in the length of `code`.
pub fn python_source_encoding(code: &[u8]) -> SourceEncoding {
    if let Some(at) = code.iter().position(|&b| b == 0) {
        return SourceEncoding::Invalid(Undecodable::NulByte {
            line: line_of(code, at),
        });
    }
    let bom = code.starts_with(UTF8_BOM);
    let body = if bom { &code[UTF8_BOM.len()..] } else { code };
    let cookie = find_cookie(body);
    if bom {
        return match cookie {
            Some(cookie) if cookie.name != "utf-8" => SourceEncoding::Invalid(Undecodable::BomConflict {
                name: cookie.name,
                line: cookie.line,
            }),
            cookie => utf8(body, true, cookie),
        };
    }
    match cookie {
        None => utf8(body, false, None),
        Some(cookie) => match codec_of(&cookie.name) {
            Codec::Utf8 => utf8(body, false, Some(cookie)),
            Codec::Ascii if !body.is_ascii() => SourceEncoding::Invalid(not_ascii(body)),
            codec => SourceEncoding::Declared { cookie, codec },
        },
    }
}

fn utf8(body: &[u8], bom: bool, cookie: Option<Cookie>) -> SourceEncoding {
    match std::str::from_utf8(body) {
        Ok(_) => SourceEncoding::Utf8 { bom, cookie },
        Err(e) => SourceEncoding::Invalid(Undecodable::NotUtf8 {
            line: line_of(body, e.valid_up_to()),
        }),
    }
}

fn not_ascii(code: &[u8]) -> Undecodable {
    let at = code.iter().position(|b| !b.is_ascii()).unwrap_or(0);
    Undecodable::NotAscii {
        line: line_of(code, at),
        byte: code.get(at).copied().unwrap_or(0),
    }
}

/// The 1-based line of byte `at`, lines ending as CPython ends them (`\n`, `\r\n`, `\r`).
fn line_of(code: &[u8], at: usize) -> u32 {
    let before = &code[..at.min(code.len())];
    let mut lines: u32 = 1;
    for (i, &b) in before.iter().enumerate() {
        let ends = b == b'\n' || (b == b'\r' && before.get(i + 1) != Some(&b'\n'));
        if ends {
            lines = lines.saturating_add(1);
        }
    }
    lines
}

/// The first two lines, without their line ends.
fn first_lines(body: &[u8]) -> (&[u8], Option<&[u8]>) {
    let split = |text: &'_ [u8]| -> (usize, Option<usize>) {
        match text.iter().position(|&b| b == b'\n' || b == b'\r') {
            None => (text.len(), None),
            Some(end) if text[end] == b'\r' && text.get(end + 1) == Some(&b'\n') => (end, Some(end + 2)),
            Some(end) => (end, Some(end + 1)),
        }
    };
    let (end, next) = split(body);
    let second = next.map(|start| {
        let rest = &body[start..];
        &rest[..split(rest).0]
    });
    (&body[..end], second)
}

fn find_cookie(body: &[u8]) -> Option<Cookie> {
    let (first, second) = first_lines(body);
    match cookie_in_line(first) {
        Line::Cookie(name) => Some(Cookie { name, line: 1 }),
        Line::Code => None,
        Line::BlankOrComment => match second.map(cookie_in_line) {
            Some(Line::Cookie(name)) => Some(Cookie { name, line: 2 }),
            _ => None,
        },
    }
}

enum Line {
    Cookie(String),
    /// Only whitespace, or a comment without a cookie: the next line may hold one.
    BlankOrComment,
    /// Anything else stops the search.
    Code,
}

fn cookie_in_line(line: &[u8]) -> Line {
    let hash = match line.iter().position(|&b| !matches!(b, b' ' | b'\t' | 0x0c)) {
        None => return Line::BlankOrComment,
        Some(at) if line[at] == b'#' => at,
        Some(_) => return Line::Code,
    };
    let mut from = hash;
    while let Some(found) = find(&line[from..], b"coding") {
        let after = from + found + b"coding".len();
        from = from + found + 1;
        if !matches!(line.get(after), Some(b':' | b'=')) {
            continue;
        }
        let mut start = after + 1;
        while matches!(line.get(start), Some(b' ' | b'\t')) {
            start += 1;
        }
        let len = line[start..]
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            .count();
        if len > 0 {
            let name = String::from_utf8_lossy(&line[start..start + len]).into_owned();
            return Line::Cookie(tokenizer_normal_name(name));
        }
    }
    Line::BlankOrComment
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `get_normal_name`: the first 12 characters, lower-cased, `_` read as `-`.
fn tokenizer_normal_name(name: String) -> String {
    let head: String = name
        .chars()
        .take(12)
        .map(|c| if c == '_' { '-' } else { c.to_ascii_lowercase() })
        .collect();
    if head == "utf-8" || head.starts_with("utf-8-") {
        "utf-8".into()
    } else if ["latin-1", "iso-8859-1", "iso-latin-1"].contains(&head.as_str())
        || ["latin-1-", "iso-8859-1-", "iso-latin-1-"]
            .iter()
            .any(|p| head.starts_with(p))
    {
        "iso-8859-1".into()
    } else {
        name
    }
}

/// The codec Python's registry finds for `name` (`codecs.lookup`: lower case, runs of other
/// characters than letters, digits and `.` read as one `_`, then the alias table), among the
/// three Airlock reads.
fn codec_of(name: &str) -> Codec {
    let mut normal = String::with_capacity(name.len());
    let mut gap = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            if gap && !normal.is_empty() {
                normal.push('_');
            }
            normal.push(c.to_ascii_lowercase());
            gap = false;
        } else {
            gap = true;
        }
    }
    let underscored = normal.replace('.', "_");
    // Python's `encodings.aliases` entries for these three codecs, and the modules' own names.
    const UTF8: &[&str] = &["utf_8", "cp65001", "u8", "utf", "utf8", "utf8_ucs2", "utf8_ucs4"];
    const ASCII: &[&str] = &[
        "ascii",
        "646",
        "ansi_x3.4_1968",
        "ansi_x3.4_1986",
        "ansi_x3_4_1968",
        "cp367",
        "csascii",
        "ibm367",
        "iso646_us",
        "iso_646.irv_1991",
        "iso_ir_6",
        "us",
        "us_ascii",
    ];
    const LATIN1: &[&str] = &[
        "latin_1",
        "8859",
        "cp819",
        "csisolatin1",
        "ibm819",
        "iso8859",
        "iso8859_1",
        "iso_8859_1",
        "iso_8859_1_1987",
        "iso_ir_100",
        "l1",
        "latin",
        "latin1",
    ];
    let is = |table: &[&str]| table.contains(&normal.as_str()) || table.contains(&underscored.as_str());
    if is(UTF8) {
        Codec::Utf8
    } else if is(ASCII) {
        Codec::Ascii
    } else if is(LATIN1) {
        Codec::Latin1
    } else {
        Codec::Other
    }
}

#[cfg(test)]
mod tests;
