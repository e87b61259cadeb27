//! Signed notes arrive from the store and from operators: any bytes must parse or fail cleanly.
#![no_main]
use airlock_auditlog::Note;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(note) = Note::parse(data) {
        assert!(note.text.ends_with('\n'), "a parsed note's text ends with a newline");
    }
});
