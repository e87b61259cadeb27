//! Entries are MessagePack read back from the store: a decoded entry encodes and decodes again.
#![no_main]
use airlock_auditlog::Entry;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(entry) = Entry::decode(data) {
        let bytes = entry.encode().expect("a decoded entry encodes");
        assert_eq!(Entry::decode(&bytes).expect("an encoded entry decodes"), entry);
    }
});
