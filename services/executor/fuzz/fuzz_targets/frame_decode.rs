//! The frame decoder on any bytes: never a panic, never an allocation the bytes do not hold,
//! and what it accepts encodes to a frame that decodes to the same job.
#![no_main]
use airlock_executor::launch::Frame;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((frame, rest)) = Frame::decode(data) {
        assert!(
            rest.len() < data.len(),
            "a frame consumes at least its magic and header"
        );
        let bytes = frame.encode().expect("a decoded frame encodes");
        let (again, tail) = Frame::decode(&bytes).expect("an encoded frame decodes");
        assert_eq!(again, frame);
        assert!(tail.is_empty());
    }
});
