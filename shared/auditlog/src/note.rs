//! C2SP signed notes: text, a blank line, then `— <key name> base64(key id || signature)` lines.

use airlock_protocol::{SigningKey, VerifierKey};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

/// More signatures than any Airlock log needs (the spec asks verifiers to accept at least 16).
pub const MAX_SIGNATURES: usize = 64;
/// Notes larger than this are refused before parsing.
pub const MAX_NOTE_BYTES: usize = 1 << 20;

const DASH: &str = "\u{2014} ";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("note is larger than {MAX_NOTE_BYTES} bytes")]
    TooLarge,
    #[error("note is not valid UTF-8")]
    NotUtf8,
    #[error("note contains a control character other than newline")]
    ControlCharacter,
    #[error("note does not end with a newline")]
    NoFinalNewline,
    #[error("note has no blank line before its signatures")]
    NoSignatureBlock,
    #[error("note has no signatures")]
    NoSignatures,
    #[error("note has more than {MAX_SIGNATURES} signatures")]
    TooManySignatures,
    #[error("malformed signature line {0:?}")]
    BadSignatureLine(String),
    #[error("signature by {name}+{key_id:08x} does not verify")]
    BadSignature { name: String, key_id: u32 },
    #[error("no signature by a trusted key")]
    NoTrustedSignature,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    pub name: String,
    pub key_id: u32,
    /// The signature proper, without the key id.
    pub signature: Vec<u8>,
}

impl NoteSignature {
    pub fn line(&self) -> String {
        let mut data = self.key_id.to_be_bytes().to_vec();
        data.extend_from_slice(&self.signature);
        format!("{DASH}{} {}\n", self.name, B64.encode(data))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The signed text, ending with a newline.
    pub text: String,
    pub signatures: Vec<NoteSignature>,
}

impl Note {
    pub fn parse(bytes: &[u8]) -> Result<Note, NoteError> {
        if bytes.len() > MAX_NOTE_BYTES {
            return Err(NoteError::TooLarge);
        }
        let all = std::str::from_utf8(bytes).map_err(|_| NoteError::NotUtf8)?;
        if all.chars().any(|c| c < ' ' && c != '\n') {
            return Err(NoteError::ControlCharacter);
        }
        if !all.ends_with('\n') {
            return Err(NoteError::NoFinalNewline);
        }
        let split = all.rfind("\n\n").ok_or(NoteError::NoSignatureBlock)?;
        let text = &all[..split + 1];
        let block = &all[split + 2..];
        let mut signatures = Vec::new();
        for line in block.lines() {
            if signatures.len() == MAX_SIGNATURES {
                return Err(NoteError::TooManySignatures);
            }
            signatures.push(parse_signature_line(line)?);
        }
        if signatures.is_empty() {
            return Err(NoteError::NoSignatures);
        }
        Ok(Note {
            text: text.to_owned(),
            signatures,
        })
    }

    /// Signs `text` (which must end with a newline) with each key.
    pub fn sign(text: &str, keys: &[&SigningKey]) -> Note {
        let signatures = keys
            .iter()
            .map(|k| NoteSignature {
                name: k.name().to_owned(),
                key_id: k.key_id(),
                signature: k.sign(text.as_bytes()).to_vec(),
            })
            .collect();
        Note {
            text: text.to_owned(),
            signatures,
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = self.text.clone();
        out.push('\n');
        for s in &self.signatures {
            out.push_str(&s.line());
        }
        out
    }

    /// Verifies the signatures by the keys `is_trusted` accepts: a known key whose signature
    /// fails rejects the note; unknown keys are ignored; at least one must verify. Returns the
    /// keys that verified.
    pub fn verify<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k VerifierKey>,
    ) -> Result<Vec<&'k VerifierKey>, NoteError> {
        let keys: Vec<&VerifierKey> = keys.into_iter().collect();
        let mut verified = Vec::new();
        for sig in &self.signatures {
            let Some(key) = keys.iter().find(|k| k.name() == sig.name && k.key_id() == sig.key_id) else {
                continue;
            };
            if !key.verify(self.text.as_bytes(), &sig.signature) {
                return Err(NoteError::BadSignature {
                    name: sig.name.clone(),
                    key_id: sig.key_id,
                });
            }
            verified.push(*key);
        }
        if verified.is_empty() {
            return Err(NoteError::NoTrustedSignature);
        }
        Ok(verified)
    }
}

fn parse_signature_line(line: &str) -> Result<NoteSignature, NoteError> {
    let bad = || NoteError::BadSignatureLine(line.chars().take(200).collect());
    let rest = line.strip_prefix(DASH).ok_or_else(bad)?;
    let (name, data) = rest.split_once(' ').ok_or_else(bad)?;
    if name.is_empty() || name.contains('+') || name.chars().any(char::is_whitespace) {
        return Err(bad());
    }
    let data = B64.decode(data).map_err(|_| bad())?;
    if data.len() < 5 {
        return Err(bad());
    }
    let key_id = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
    Ok(NoteSignature {
        name: name.to_owned(),
        key_id,
        signature: data[4..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE_KEY: &str = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
    const EXAMPLE_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

    #[test]
    fn the_published_example_verifies() {
        let key = VerifierKey::parse(EXAMPLE_KEY).unwrap();
        let note = Note::parse(EXAMPLE_NOTE.as_bytes()).unwrap();
        assert_eq!(note.text, "This is an example message.\n");
        assert_eq!(note.signatures[0].key_id, 0x530d903a);
        assert_eq!(note.verify([&key]).unwrap().len(), 1);
        assert_eq!(note.to_text(), EXAMPLE_NOTE);
    }

    #[test]
    fn a_changed_text_or_unknown_key_is_rejected() {
        let key = VerifierKey::parse(EXAMPLE_KEY).unwrap();
        let changed = EXAMPLE_NOTE.replace("example message", "example massage");
        let note = Note::parse(changed.as_bytes()).unwrap();
        assert!(matches!(note.verify([&key]), Err(NoteError::BadSignature { .. })));
        let other = SigningKey::generate("example.com/foo").unwrap().verifier();
        let note = Note::parse(EXAMPLE_NOTE.as_bytes()).unwrap();
        assert_eq!(note.verify([&other]), Err(NoteError::NoTrustedSignature));
    }

    #[test]
    fn signing_round_trips_with_several_keys() {
        let a = SigningKey::generate("log.example/a").unwrap();
        let b = SigningKey::generate("log.example/a").unwrap();
        let note = Note::sign("hello\n\nworld\n", &[&a, &b]);
        let parsed = Note::parse(note.to_text().as_bytes()).unwrap();
        assert_eq!(parsed, note);
        assert_eq!(parsed.verify([&a.verifier(), &b.verifier()]).unwrap().len(), 2);
        assert_eq!(parsed.verify([&b.verifier()]).unwrap().len(), 1);
    }

    #[test]
    fn malformed_notes_are_refused() {
        for bad in [
            "no newline",
            "text\n",
            "text\n\n",
            "text\n\n- name AAAAAAA=\n",
            "text\n\n\u{2014} name\n",
            "text\n\n\u{2014} na+me AAAAAAA=\n",
            "text\n\n\u{2014} name AAAA\n",
            "te\u{7}xt\n\n\u{2014} name AAAAAAA=\n",
        ] {
            assert!(Note::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert_eq!(Note::parse(&[0xff, b'\n']), Err(NoteError::NotUtf8));
    }
}
