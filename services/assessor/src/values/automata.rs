//! The built-in rules' regular expressions, compiled to DFAs when the crate was built
//! (`build.rs`): a fresh process tests a value against one without compiling anything.

use regex_automata::Input;
use regex_automata::dfa::{Automaton as _, dense};

include!(concat!(env!("OUT_DIR"), "/rule-automata.rs"));

/// The serialized DFAs. A DFA is read in place as `u32`s, so the bytes must be aligned for them
/// (each one's offset in the blob is a multiple of 8).
#[repr(C)]
struct Aligned<B: ?Sized> {
    _align: [u64; 0],
    bytes: B,
}

static BLOB: &Aligned<[u8]> = &Aligned {
    _align: [],
    bytes: *include_bytes!(concat!(env!("OUT_DIR"), "/rule-automata.bin")),
};

/// A DFA built ahead of time for one expression.
#[derive(Debug, Clone)]
pub struct Prebuilt(dense::DFA<&'static [u32]>);

impl Prebuilt {
    /// The DFA built for exactly this expression, if there is one. Reading it checks that it
    /// is well formed (and of this crate's `regex-automata` version and byte order): a DFA that
    /// does not read back is not used, and the expression is compiled as any other.
    pub fn for_expression(pattern: &str) -> Option<Prebuilt> {
        let at = AUTOMATA.binary_search_by(|(p, _, _)| (*p).cmp(pattern)).ok()?;
        let (_, offset, length) = AUTOMATA[at];
        let bytes = BLOB.bytes.get(offset..offset + length)?;
        match dense::DFA::from_bytes(bytes) {
            Ok((dfa, _)) => Some(Prebuilt(dfa)),
            Err(error) => {
                tracing::warn!(%pattern, %error, "a prebuilt automaton does not read back; compiling the expression");
                None
            }
        }
    }

    /// Whether the expression matches anywhere in `text`; `None` when the DFA gave up (it
    /// cannot for the expressions built: none has a Unicode word boundary).
    pub fn is_match(&self, text: &str) -> Option<bool> {
        self.0
            .try_search_fwd(&Input::new(text).earliest(true))
            .ok()
            .map(|found| found.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::{AUTOMATA, Prebuilt};
    use crate::values::compile_regexes;
    use regex_automata::MatchKind;

    /// Texts of the kind rules test: every line of the corpus, each of its words, and each
    /// quoted string in it, plus variants that differ in case.
    fn texts() -> Vec<String> {
        let mut texts = Vec::new();
        for (_, file) in crate::values::tests::corpus_files() {
            for line in file.lines() {
                texts.push(line.to_string());
                texts.extend(line.split_whitespace().map(str::to_string));
                texts.extend(line.split(['"', '\'']).skip(1).step_by(2).map(str::to_string));
            }
        }
        let upper: Vec<String> = texts.iter().map(|t| t.to_uppercase()).collect();
        texts.extend(upper);
        texts.sort();
        texts.dedup();
        texts
    }

    #[test]
    fn every_prebuilt_automaton_agrees_with_the_compiled_expression() {
        let texts = texts();
        assert!(texts.len() > 5000, "{} texts", texts.len());
        assert!(AUTOMATA.len() > 80, "{} prebuilt automata", AUTOMATA.len());
        let mut matched = 0;
        for (pattern, _, _) in AUTOMATA {
            let automaton = Prebuilt::for_expression(pattern).expect("every prebuilt automaton reads back");
            let regex = compile_regexes(&[pattern], MatchKind::LeftmostFirst).expect("a built-in expression compiles");
            for text in &texts {
                let expected = regex.is_match(text.as_bytes());
                assert_eq!(automaton.is_match(text), Some(expected), "{pattern:?} on {text:?}");
                matched += usize::from(expected);
            }
        }
        // The comparison covered matches as well as misses.
        assert!(matched > 1000, "only {matched} matches");
    }

    #[test]
    fn an_expression_without_a_prebuilt_automaton_has_none() {
        assert!(Prebuilt::for_expression("no rule has this expression").is_none());
    }
}
