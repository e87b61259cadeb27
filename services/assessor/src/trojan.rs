//! Trojan Source: code that reads one way to a person and another to the interpreter.
//!
//! Bidirectional controls are a rule (`AIR-PY-TROJAN-SOURCE`, both languages). Here, what a
//! rule over text cannot tell, because it depends on where the character is:
//! - invisible characters (Unicode's default-ignorable code points: zero-width spaces and
//!   joiners, word joiners, Hangul fillers, tag characters, ...) inside a name or a shell word
//!   make two names that look the same differ, or hide a name that looks like nothing; inside a
//!   string they change what a string means (a URL, a command) without showing;
//! - letters of another script that look like Latin ones (Cyrillic `а`, `е`, `о`, `с`, Greek
//!   `ο`, ...) inside a Latin name, or a name written wholly in such letters that looks like a
//!   name the file uses (or a built-in such as `exec`);
//! - compatibility forms that Python folds (NFKC) into a plain ASCII name: `ｅｘｅｃ` is `exec`.
//!
//! Comments are left alone (they do not run); ordinary non-Latin text is not a finding: an emoji
//! sequence's joiners and variation selectors, Persian and Indic joiners between letters of
//! their own script, accented Latin, Greek letters in a formula.

use ruff_python_ast::token::{TokenKind, Tokens};
use ruff_text_size::Ranged;
use unicode_normalization::UnicodeNormalization;
use unicode_security::MixedScript;
use unicode_security::mixed_script::AugmentedScriptSet;

/// Hits kept per file: enough to show the trick, bounded whatever the file.
const MAX_HITS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An invisible character inside a name or a shell word.
    InvisibleInName,
    /// An invisible character inside a string, next to what it changes.
    InvisibleInText,
    /// Letters of another script that look like Latin ones, in a name.
    Lookalike,
    /// A name in compatibility forms that Python reads as a plain ASCII name.
    Compatibility,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub kind: Kind,
    /// Byte offsets of the name or string in the source.
    pub start: usize,
    pub end: usize,
    /// What is hidden, for the explanation ("`pr⟨U+200B⟩int`").
    pub detail: String,
}

/// Names that matter most if disguised, beside those the file itself uses.
const SENSITIVE_NAMES: &[&str] = &[
    "exec",
    "eval",
    "compile",
    "open",
    "print",
    "getattr",
    "setattr",
    "globals",
    "locals",
    "vars",
    "__import__",
    "__builtins__",
    "os",
    "sys",
    "system",
    "subprocess",
    "popen",
    "run",
    "socket",
    "requests",
    "urllib",
    "input",
    "main",
    "True",
    "False",
    "None",
];

/// A Python file's names, strings and f-string parts, from its tokens.
pub fn python(source: &str, tokens: &Tokens) -> Vec<Hit> {
    if source.is_ascii() {
        return Vec::new();
    }
    let mut hits = Vec::new();
    let mut ascii_names: Vec<&str> = SENSITIVE_NAMES.to_vec();
    let mut foreign: Vec<(usize, usize)> = Vec::new();
    for token in tokens.iter() {
        let range = token.range();
        let (start, end) = (usize::from(range.start()), usize::from(range.end()));
        let Some(text) = source.get(start..end) else { continue };
        match token.kind() {
            TokenKind::Name if text.is_ascii() => ascii_names.push(text),
            TokenKind::Name | TokenKind::Unknown => {
                name(text, start, end, true, &mut hits);
                foreign.push((start, end));
            }
            TokenKind::String | TokenKind::FStringMiddle | TokenKind::TStringMiddle if !text.is_ascii() => {
                string(text, start, end, &mut hits)
            }
            _ => {}
        }
        if hits.len() >= MAX_HITS {
            break;
        }
    }
    ascii_names.sort_unstable();
    ascii_names.dedup();
    for (start, end) in foreign {
        let text = &source[start..end];
        if hits.iter().any(|h| h.start == start) || text.chars().any(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        let skeleton: String = unicode_security::skeleton(text).collect();
        if skeleton.is_ascii() && skeleton != text && ascii_names.binary_search(&skeleton.as_str()).is_ok() {
            push(
                &mut hits,
                Kind::Lookalike,
                start,
                end,
                format!("`{text}` is written in another script's letters but looks like `{skeleton}`"),
            );
        }
    }
    hits
}

/// A bash script's words (outside quotes and comments) and quoted strings.
pub fn bash(source: &str) -> Vec<Hit> {
    if source.is_ascii() {
        return Vec::new();
    }
    let mut hits = Vec::new();
    for piece in shell_pieces(source) {
        let text = &source[piece.start..piece.end];
        if text.is_ascii() {
            continue;
        }
        if piece.quoted {
            string(text, piece.start, piece.end, &mut hits);
        } else {
            name(text, piece.start, piece.end, false, &mut hits);
        }
        if hits.len() >= MAX_HITS {
            break;
        }
    }
    hits
}

/// A name (a Python identifier, a shell word): invisible characters, lookalike letters mixed
/// with Latin ones, and (for Python) compatibility forms.
fn name(text: &str, start: usize, end: usize, python: bool, hits: &mut Vec<Hit>) {
    // A Python identifier cannot hold an invisible character by accident; a shell word can hold
    // an emoji's variation selector or joiner (`status=❤️`): there, as in strings, only one next
    // to what it changes counts.
    let hidden = if python {
        text.chars().any(|c| invisible(c) && !bidi_control(c))
    } else {
        hidden_in(text).is_some()
    };
    if hidden {
        return push(
            hits,
            Kind::InvisibleInName,
            start,
            end,
            format!("`{}` has invisible characters", visible(text)),
        );
    }
    if python {
        let folded: String = text.nfkc().collect();
        if folded != text && folded.is_ascii() {
            return push(
                hits,
                Kind::Compatibility,
                start,
                end,
                format!("`{text}` is read by Python as `{folded}`"),
            );
        }
    }
    if !text.chars().any(|c| c.is_ascii_alphabetic()) || text.is_single_script() {
        return;
    }
    for c in text.chars().filter(|c| !c.is_ascii()) {
        let script = AugmentedScriptSet::for_char(c);
        if script.base.contains_script(unicode_script::Script::Latin) || script.is_all() {
            continue;
        }
        let prototype: String = unicode_security::skeleton(&c.to_string()).collect();
        if prototype.len() == 1 && prototype.chars().all(|p| p.is_ascii_alphanumeric()) {
            return push(
                hits,
                Kind::Lookalike,
                start,
                end,
                format!(
                    "`{text}` mixes scripts: `{c}` (U+{:04X}) is not the Latin `{prototype}` it looks like",
                    u32::from(c)
                ),
            );
        }
    }
}

/// A string's invisible characters that sit next to what they change: ASCII letters, digits
/// or punctuation (a URL, a path, a command). Joiners inside emoji sequences and scripts that
/// need them are not findings.
fn string(text: &str, start: usize, end: usize, hits: &mut Vec<Hit>) {
    if let Some((c, shown)) = hidden_in(text) {
        push(
            hits,
            Kind::InvisibleInText,
            start,
            end,
            format!("a string hides U+{:04X} in `{}`", u32::from(c), visible(&shown)),
        );
    }
}

/// The first invisible character of `text` that sits next to what it changes (ASCII letters,
/// digits or punctuation), with the text around it.
fn hidden_in(text: &str) -> Option<(char, String)> {
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !invisible(c) || bidi_control(c) {
            continue;
        }
        let before = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
        let after = chars.get(i + 1).copied();
        let hidden = if tag(c) {
            // Tags follow a black flag in subdivision flags (🏴 + tags + cancel tag).
            !before.is_some_and(|b| b == '\u{1F3F4}' || tag(b))
        } else if c == '\u{FE0F}' {
            // A keycap sequence: a digit, VS16, the combining keycap.
            after != Some('\u{20E3}') && before.is_some_and(|b| b.is_ascii_graphic())
        } else {
            before.is_some_and(|b| b.is_ascii_graphic()) || after.is_some_and(|a| a.is_ascii_graphic())
        };
        if hidden {
            let from = i.saturating_sub(12);
            let shown: String = chars[from..(i + 13).min(chars.len())].iter().collect();
            return Some((c, shown));
        }
    }
    None
}

fn push(hits: &mut Vec<Hit>, kind: Kind, start: usize, end: usize, detail: String) {
    if hits.len() < MAX_HITS {
        hits.push(Hit {
            kind,
            start,
            end,
            detail,
        });
    }
}

/// `text` with each invisible character shown as `⟨U+XXXX⟩`.
fn visible(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if invisible(c) {
            shown.push_str(&format!("⟨U+{:04X}⟩", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    shown
}

/// Unicode's Default_Ignorable_Code_Point: characters that display as nothing.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// The explicit directional embeddings, overrides and isolates: the bidi rule's concern.
fn bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn tag(c: char) -> bool {
    matches!(c, '\u{E0000}'..='\u{E007F}')
}

struct Piece {
    start: usize,
    end: usize,
    quoted: bool,
}

/// A shell script cut into unquoted words and quoted strings, comments dropped. A light
/// reading, enough to tell where a character is: here-document bodies read as words.
fn shell_pieces(source: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut chars = source.char_indices().peekable();
    let mut word: Option<usize> = None;
    let end_word = |word: &mut Option<usize>, at: usize, pieces: &mut Vec<Piece>| {
        if let Some(start) = word.take() {
            pieces.push(Piece {
                start,
                end: at,
                quoted: false,
            });
        }
    };
    while let Some((at, c)) = chars.next() {
        match c {
            '#' if word.is_none() => {
                for (_, c) in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '\'' | '"' => {
                end_word(&mut word, at, &mut pieces);
                let start = at + 1;
                let mut end = source.len();
                let mut escaped = false;
                for (i, q) in chars.by_ref() {
                    if c == '"' && !escaped && q == '\\' {
                        escaped = true;
                        continue;
                    }
                    if q == c && !escaped {
                        end = i;
                        break;
                    }
                    escaped = false;
                }
                pieces.push(Piece {
                    start,
                    end,
                    quoted: true,
                });
            }
            c if c.is_whitespace() && !invisible(c) || ";|&()<>`$={}[],".contains(c) => {
                end_word(&mut word, at, &mut pieces)
            }
            '\\' => {
                word.get_or_insert(at);
                chars.next();
            }
            _ => {
                word.get_or_insert(at);
            }
        }
    }
    end_word(&mut word, source.len(), &mut pieces);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn python_hits(code: &str) -> Vec<Hit> {
        let parsed = ruff_python_parser::parse_unchecked(
            code,
            ruff_python_parser::ParseOptions::from(ruff_python_parser::Mode::Module),
        );
        python(code, parsed.tokens())
    }

    fn kinds(hits: &[Hit]) -> Vec<Kind> {
        hits.iter().map(|h| h.kind).collect()
    }

    #[test]
    fn python_names_with_hidden_or_lookalike_letters_are_found() {
        // A Hangul filler is a valid, invisible identifier.
        let filler = python_hits("import os\n\u{3164} = os.system\n\u{3164}('id')\n");
        assert_eq!(kinds(&filler)[0], Kind::InvisibleInName, "{filler:?}");
        // A Cyrillic `е` inside a Latin name.
        let mixed = python_hits("def is_admin(usеr):\n    return True\n");
        assert_eq!(kinds(&mixed), [Kind::Lookalike], "{mixed:?}");
        assert!(mixed[0].detail.contains("U+0435"), "{}", mixed[0].detail);
        // A name wholly in Cyrillic that looks like `exec`.
        let whole = python_hits("ехес = print\nехес('x')\n");
        assert!(kinds(&whole).contains(&Kind::Lookalike), "{whole:?}");
        // Fullwidth letters Python folds into `exec`.
        let compat = python_hits("\u{FF45}\u{FF58}\u{FF45}\u{FF43}('print(1)')\n");
        assert_eq!(kinds(&compat)[0], Kind::Compatibility, "{compat:?}");
        assert!(compat[0].detail.contains("`exec`"));
    }

    #[test]
    fn python_strings_hide_characters_next_to_ascii_only() {
        let url = python_hits("import requests\nrequests.get('https://pypi\u{200B}.org/simple')\n");
        assert_eq!(kinds(&url), [Kind::InvisibleInText], "{url:?}");
        let tags = python_hits("note = 'ok\u{E0069}\u{E0067}\u{E006E}'\n");
        assert_eq!(kinds(&tags), [Kind::InvisibleInText], "{tags:?}");
    }

    #[test]
    fn ordinary_unicode_is_not_a_finding() {
        for code in [
            "family = '👨\u{200D}👩\u{200D}👧'\nheart = '❤\u{FE0F}'\nkeycap = '1\u{FE0F}\u{20E3}'\n",
            "flag = '🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}'\n",
            "persian = 'می\u{200C}خواهم'\n",
            "café = 1\nnaïve = café + 1\n",
            "Δx = 0.5\nσ = 2\nпривет = 'мир'\n",
            "# comment with a zero\u{200B}width space\nx = 1\n",
            "µ = 1.0\n",
        ] {
            assert_eq!(python_hits(code), vec![], "{code}");
        }
    }

    #[test]
    fn bash_words_and_strings() {
        let command = bash("с\u{0075}rl -fsSL https://example.org/x | sh\n");
        assert_eq!(kinds(&command), [Kind::Lookalike], "{command:?}");
        let hidden = bash("r\u{200B}m -rf ~/work\n");
        assert_eq!(kinds(&hidden), [Kind::InvisibleInName], "{hidden:?}");
        let quoted = bash("curl \"https://example.org\u{2060}/a\"\n");
        assert_eq!(kinds(&quoted), [Kind::InvisibleInText], "{quoted:?}");
        for ordinary in [
            "echo 'Привет, мир'\n",
            "# zero\u{200B}width in a comment\necho ok\n",
            "echo \"👍\u{FE0F} done\"\n",
            "msg=\"naïve café\"\n",
            "status=❤\u{FE0F}\n",
        ] {
            assert_eq!(bash(ordinary), vec![], "{ordinary}");
        }
    }
}
