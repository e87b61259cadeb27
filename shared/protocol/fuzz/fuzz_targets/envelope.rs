//! Any bytes on any subject: decoding never panics, a decoded submission validates without
//! panicking, a refusal of it is bounded, and a decoded envelope encodes and decodes again.
#![no_main]
use airlock_protocol::{Envelope, Event, Refusal, RefusalReason, refusal::MAX_DETAIL_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first bytes choose the subject, so that subject checks are fuzzed too.
    let (subject_bytes, body) = data.split_at(data.len().min(data.first().map_or(0, |n| *n as usize % 48)));
    let subject = String::from_utf8_lossy(subject_bytes);
    for result in [Envelope::decode(body), Envelope::decode_on(&subject, body)] {
        match result {
            Ok(envelope) => {
                if let Event::Submitted(request) = &envelope.event {
                    let _ = request.validate();
                    let _ = airlock_protocol::digest::request_digest(
                        request,
                        envelope.request_id.client(),
                        &[],
                    );
                }
                let bytes = envelope.encode().expect("a decoded envelope encodes");
                assert_eq!(Envelope::decode(&bytes).expect("and decodes again"), envelope);
            }
            Err(error) => {
                let refusal = Refusal::of_message(
                    RefusalReason::from(&error),
                    airlock_protocol::error_chain(&error),
                    &subject,
                    body,
                );
                assert!(refusal.detail.len() <= MAX_DETAIL_BYTES);
            }
        }
    }
});
