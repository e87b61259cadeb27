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

#[cfg(test)]
mod tests {
    use super::*;

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
