//! The wire format against bytes captured from this runsc (`tests/fixtures/`, see its README):
//! every message has a header and decodes, and the record made from them says what the
//! captured programs did.

use super::record::{Clocks, TraceRecord};
use super::wire::{Header, Point};

const DOCKER_EXEC: &[u8] = include_bytes!("../../tests/fixtures/gvisor-trace-docker-exec.bin");
const MARKERS: &[u8] = include_bytes!("../../tests/fixtures/gvisor-trace-markers.bin");

fn messages(capture: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = capture;
    while let Some(len) = rest.get(..4) {
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        out.push(&rest[4..4 + len]);
        rest = &rest[4 + len..];
    }
    out
}

fn record_of(capture: &[u8]) -> airlock_protocol::Observed {
    let mut record = TraceRecord::new(Clocks::now());
    for message in messages(capture) {
        record.take(message, false);
    }
    record.into_record()
}

#[test]
fn every_captured_message_has_a_header_and_decodes() {
    for capture in [DOCKER_EXEC, MARKERS] {
        let all = messages(capture);
        assert!(all.len() > 50, "{}", all.len());
        for message in all {
            let (header, payload) = Header::parse(message).expect("a header");
            assert_eq!(header.dropped, 0);
            let point = Point::decode(header, payload).expect("a point");
            assert!(point.is_some(), "a point Airlock asked for: kind {}", header.kind);
        }
    }
}

#[test]
fn the_captured_program_reads_back_as_what_it_did() {
    let record = record_of(DOCKER_EXEC);
    assert_eq!(record.events_lost, 0);
    let file = |path: &str, access: &str| record.files.iter().any(|f| f.path == path && f.access == access);
    assert!(file("/tmp/w.txt", "create"), "{record:#?}");
    assert!(file(super::points::NO_PATH, "delete"), "{record:#?}");
    assert!(file(super::points::NO_PATH, "mkdir"), "{record:#?}");
    let net = |call: &str, address: &str, result: &str| {
        record
            .network
            .iter()
            .any(|n| n.call == call && n.address == address && n.result == result)
    };
    assert!(net("connect", "10.1.2.3:8080", "EHOSTUNREACH"), "{record:#?}");
    assert!(
        net("bind", "[::1]:9999", "ok") || net("bind", "[::1]:9999", "EADDRNOTAVAIL"),
        "{record:#?}"
    );
    assert!(net("send", "", "EHOSTUNREACH"), "{record:#?}");
    let exec = |path: &str, result: &str| record.processes.iter().any(|p| p.path == path && p.result == result);
    assert!(exec("/bin/true", "ok") && exec("/nonexistent", "ENOENT"), "{record:#?}");
    let privileged = |call: &str, result: &str| record.privileged.iter().any(|p| p.call == call && p.result == result);
    assert!(
        !privileged("setuid/setgid", "EPERM"),
        "without Airlock's start marker, set*id calls are the identity switch's: {record:#?}"
    );
    assert!(privileged("mount", "EPERM"), "{record:#?}");
    assert!(
        privileged("ptrace", "ok"),
        "no seccomp profile in that capture: {record:#?}"
    );
    // No closing point from PID 1 in this capture: the record says drops after it are unknown.
    assert_eq!(record.findings.len(), 1, "{record:#?}");
}

#[test]
fn before_the_start_marker_set_id_calls_are_airlocks_and_root_is_left_out() {
    let record = record_of(MARKERS);
    assert_eq!(record.events_lost, 0);
    assert!(
        record.findings.is_empty(),
        "PID 1's closing point was captured: {record:#?}"
    );
    let setid: Vec<_> = record.privileged.iter().filter(|p| p.call == "setuid/setgid").collect();
    assert_eq!(setid.len(), 1, "{record:#?}");
    assert_eq!((setid[0].count, setid[0].result.as_str()), (1, "EPERM"));
    assert!(
        !record.files.iter().any(|f| f.path.starts_with("/.airlock-trace")),
        "markers are not the program's files: {record:#?}"
    );
    assert!(
        record
            .files
            .iter()
            .any(|f| f.path == "/tmp/w.txt" && f.access == "create")
    );
    assert!(record.processes.iter().any(|p| p.path == "/bin/sh"), "{record:#?}");
}
