//! Each event's body on its own (the first byte picks the type): decoding never panics, and a
//! decoded value survives a round trip.
#![no_main]
use airlock_protocol::event::Assessed;
use airlock_protocol::execution::{Activity, Egress, ExecStarted, OutputChunk, Terminal, UsageSample};
use airlock_protocol::{Decided, ExecutionRequest, OverrideAnswered, OverrideAsked, Refusal};
use libfuzzer_sys::fuzz_target;
use serde::{Serialize, de::DeserializeOwned};

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(bytes: &[u8]) {
    if let Ok(value) = rmp_serde::from_slice::<T>(bytes) {
        let again = rmp_serde::to_vec_named(&value).expect("a decoded value encodes");
        assert_eq!(rmp_serde::from_slice::<T>(&again).expect("and decodes again"), value);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else { return };
    match which % 12 {
        0 => round_trip::<ExecutionRequest>(body),
        1 => round_trip::<Assessed>(body),
        2 => round_trip::<OverrideAsked>(body),
        3 => round_trip::<OverrideAnswered>(body),
        4 => round_trip::<Decided>(body),
        5 => round_trip::<ExecStarted>(body),
        6 => round_trip::<OutputChunk>(body),
        7 => round_trip::<UsageSample>(body),
        8 => round_trip::<Activity>(body),
        9 => round_trip::<Egress>(body),
        10 => round_trip::<Terminal>(body),
        _ => round_trip::<Refusal>(body),
    }
});
