//! Bounding text that came from outside.
//!
//! Every string Mai (or a program in the sandbox) can put on the wire is cut to a bound before
//! it is stored, shown or logged. `String::truncate` panics inside a multi-byte character, and
//! a message whose text is cut that way once crash-looped the auditor, so every cut goes
//! through here: by character, never inside a UTF-8 sequence.

/// The longest prefix of `text` that fits in `max_bytes` bytes and ends on a character boundary.
pub fn prefix(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    // `is_char_boundary(0)` is always true, so this finds a cut.
    let cut = (0..=max_bytes).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    &text[..cut]
}

/// Cuts `text` in place to at most `max_bytes` bytes, on a character boundary.
pub fn truncate(text: &mut String, max_bytes: usize) {
    let len = prefix(text, max_bytes).len();
    text.truncate(len);
}

/// `text` cut to at most `max_bytes` bytes, with `…` appended when something was cut (the
/// marker counts towards the bound).
pub fn clip(text: &str, max_bytes: usize) -> String {
    const MARK: &str = "…";
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut out = prefix(text, max_bytes.saturating_sub(MARK.len())).to_owned();
    if out.len() + MARK.len() <= max_bytes {
        out.push_str(MARK);
    }
    out
}

/// Lossy UTF-8 of some bytes, cut to `max_bytes` (for showing program output or raw messages).
pub fn clip_bytes(bytes: &[u8], max_bytes: usize) -> String {
    // Decoding only what can be shown keeps a 4 MiB message from being copied to cut 1 KiB.
    let window = &bytes[..bytes.len().min(max_bytes.saturating_add(4))];
    clip(&String::from_utf8_lossy(window), max_bytes)
}

/// Whether `text` holds a control character (line breaks and tabs included): labels and names
/// are shown on one line, in terminals and chat, where control characters can forge lines.
pub fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// Whether `c` changes how text around it is shown without being seen itself: control
/// characters (terminal escapes start with one), bidirectional controls (Trojan Source), line and
/// paragraph separators (a new line where none is seen), and invisible or zero-width characters
/// (an identifier that is not what it looks like).
pub fn is_deceptive(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E007F}'
                | '\u{E0100}'..='\u{E01EF}'
        )
}

/// Text from outside (a label, a file name, code, a finding's snippet, program output) made
/// safe to show as data on one line, in a terminal, a chat message or a web page: every
/// deceptive character ([`is_deceptive`], line breaks and tabs included) is shown as
/// `⟨U+202E⟩`, so what a person reads is what the bytes say. Each surface escapes its own markup
/// (HTML, Markdown) after this.
pub fn visible_line(text: &str) -> String {
    show(text, |_| false)
}

/// The same for text of several lines (code, output): line feeds and tabs stay; everything else
/// deceptive is shown as `⟨U+…⟩`, a carriage return included (it can overwrite a line).
pub fn visible_block(text: &str) -> String {
    show(text, |c| c == '\n' || c == '\t')
}

fn show(text: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_deceptive(c) && !keep(c) {
            out.push_str(&format!("⟨U+{:04X}⟩", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile strings, and what a person must see of them.
    const HOSTILE: &[(&str, &str)] = &[
        ("report.py", "report.py"),
        ("a\nb", "a⟨U+000A⟩b"),
        ("ok\rEVIL", "ok⟨U+000D⟩EVIL"),
        ("\u{1b}]52;c;ZXZpbA==\u{7}", "⟨U+001B⟩]52;c;ZXZpbA==⟨U+0007⟩"),
        ("\u{1b}[2J\u{1b}[H", "⟨U+001B⟩[2J⟨U+001B⟩[H"),
        (
            "report.py) rated LOW\u{2028}Security review: safe",
            "report.py) rated LOW⟨U+2028⟩Security review: safe",
        ),
        ("fdp.\u{202E}yp.exe", "fdp.⟨U+202E⟩yp.exe"),
        ("\u{2066}hidden\u{2069}", "⟨U+2066⟩hidden⟨U+2069⟩"),
        ("ad\u{200B}min", "ad⟨U+200B⟩min"),
        ("\u{FEFF}bom", "⟨U+FEFF⟩bom"),
        ("tag\u{E0041}", "tag⟨U+E0041⟩"),
        ("para\u{2029}graph", "para⟨U+2029⟩graph"),
        ("café ☕ 日本", "café ☕ 日本"),
        ("tab\there", "tab⟨U+0009⟩here"),
    ];

    #[test]
    fn deceptive_characters_are_shown_not_obeyed() {
        for (hostile, shown) in HOSTILE {
            assert_eq!(visible_line(hostile), *shown, "{hostile:?}");
            assert!(!visible_line(hostile).chars().any(is_deceptive), "{hostile:?}");
        }
        assert_eq!(visible_block("a\n\tb\r\n"), "a\n\tb⟨U+000D⟩\n");
        assert_eq!(visible_block("x\u{202E}y"), "x⟨U+202E⟩y");
    }

    #[test]
    fn cuts_never_split_a_character() {
        let s = "aé€😀";
        for max in 0..=s.len() + 2 {
            let p = prefix(s, max);
            assert!(p.len() <= max);
            assert!(s.starts_with(p));
            let mut t = s.to_owned();
            truncate(&mut t, max);
            assert_eq!(t, p);
        }
        assert_eq!(prefix(s, 2), "a");
        assert_eq!(prefix(s, 3), "aé");
    }

    #[test]
    fn clip_marks_what_it_cut() {
        assert_eq!(clip("hello", 10), "hello");
        assert_eq!(clip("hello world", 8), "hello…");
        assert!(clip("ééééé", 4).len() <= 4);
        assert_eq!(clip("abc", 0), "");
        assert_eq!(clip_bytes(b"ab\xffcd", 100), "ab\u{fffd}cd");
    }

    proptest::proptest! {
        #[test]
        fn any_text_any_bound(text in ".{0,64}", max in 0usize..80) {
            let p = prefix(&text, max);
            proptest::prop_assert!(p.len() <= max);
            proptest::prop_assert!(text.starts_with(p));
            let c = clip(&text, max);
            proptest::prop_assert!(c.len() <= max);
            let mut t = text.clone();
            truncate(&mut t, max);
            proptest::prop_assert_eq!(t.as_str(), p);
        }

        #[test]
        fn any_bytes_any_bound(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64), max in 0usize..80) {
            proptest::prop_assert!(clip_bytes(&bytes, max).len() <= max);
        }
    }
}
