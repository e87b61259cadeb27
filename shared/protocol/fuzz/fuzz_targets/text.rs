//! Cutting text that came from outside: never inside a character, never over the bound.
#![no_main]
use airlock_protocol::text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&bound, rest)) = data.split_first() else { return };
    let max = usize::from(bound) * 4;
    let lossy = String::from_utf8_lossy(rest);
    let p = text::prefix(&lossy, max);
    assert!(p.len() <= max && lossy.starts_with(p));
    assert!(text::clip(&lossy, max).len() <= max);
    assert!(text::clip_bytes(rest, max).len() <= max);
    let mut owned = lossy.to_string();
    text::truncate(&mut owned, max);
    assert_eq!(owned, p);
});
