//! Any text as a bash script: the parser never panics, stops within its nesting limit, and
//! every offset it reports (syntax errors, here-document bodies, where it stopped) lies inside
//! the text.
#![no_main]
use airlock_bash_parser::{Unlimited, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data);
    let len = source.len() as u32;
    let Ok(script) = parse(&source, 32, &mut Unlimited) else {
        panic!("an unlimited budget never runs out");
    };
    assert!(script.error_count as usize >= script.errors.len());
    for error in &script.errors {
        assert!(error.offset <= len, "error at {} of {len}", error.offset);
    }
    for heredoc in &script.heredocs {
        assert!(heredoc.range.start <= heredoc.range.end && heredoc.range.end <= len);
    }
    if let Some(at) = script.too_deep_at {
        assert!(at <= len);
    }
});
