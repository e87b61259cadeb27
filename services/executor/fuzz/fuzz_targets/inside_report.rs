//! The one thing the executor reads from inside the sandbox, the program's network report (a
//! memfd the program can write anything to): any bytes parse without a panic, within bounds.
#![no_main]
use airlock_executor::activity::parse_inside;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let report = parse_inside(data);
    assert!(report.network_attempts.len() <= 100);
    for attempt in &report.network_attempts {
        assert!(attempt.starts_with("socket."), "{attempt:?}");
        assert!(
            attempt.chars().count() <= "socket.gethostbyaddr ".len() + 200,
            "{attempt:?}"
        );
    }
});
