//! Deciding whether submitted bytes are source text at all.

use std::borrow::Cow;

pub enum Decoded<'a> {
    Text(Cow<'a, str>),
    /// Mostly text, but not valid UTF-8 (a Latin-1 file, a stray byte); invalid bytes replaced.
    Lossy(Cow<'a, str>),
    Binary,
}

/// Bytes looked at to tell text from binary.
const SNIFF_BYTES: usize = 8192;

pub fn decode(code: &[u8]) -> Decoded<'_> {
    if looks_binary(code) {
        return Decoded::Binary;
    }
    match std::str::from_utf8(code) {
        Ok(text) => Decoded::Text(Cow::Borrowed(text)),
        Err(_) => Decoded::Lossy(String::from_utf8_lossy(code)),
    }
}

/// NUL bytes, or many control characters, mean a compiled or packed file: no interpreter would
/// read it as source, and no rule could read it either.
fn looks_binary(code: &[u8]) -> bool {
    let head = &code[..code.len().min(SNIFF_BYTES)];
    if head.contains(&0) {
        return true;
    }
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c | 0x1b))
        .count();
    control * 10 > head.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_latin1_and_binary_are_told_apart() {
        assert!(matches!(decode(b"print('hi')\n"), Decoded::Text(_)));
        assert!(matches!(decode(b"# caf\xe9\nprint(1)\n"), Decoded::Lossy(_)));
        assert!(matches!(decode(b"\x7fELF\x02\x01\x01\x00\x00"), Decoded::Binary));
        assert!(matches!(decode(&[1u8, 2, 3, 4, 5, 6, 7, 8]), Decoded::Binary));
        assert!(matches!(decode(b""), Decoded::Text(_)));
    }
}
