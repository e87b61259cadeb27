//! Proof files are handed to operators and back: any bytes must parse or fail cleanly.
#![no_main]
use airlock_auditlog::TlogProof;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = TlogProof::parse(data);
});
