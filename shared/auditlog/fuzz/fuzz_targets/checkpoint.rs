//! Checkpoints: a body that parses prints back to a body that parses to the same checkpoint.
#![no_main]
use airlock_auditlog::{Checkpoint, SignedCheckpoint};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = SignedCheckpoint::parse(data);
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(checkpoint) = Checkpoint::parse_body(text) {
            let again = Checkpoint::parse_body(&checkpoint.body()).expect("a printed body parses");
            assert_eq!(again, checkpoint);
        }
    }
});
