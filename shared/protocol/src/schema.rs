//! The JSON Schemas of the wire contract, for other languages. `schemas/` holds them, generated
//! by `airlock schema write` and checked to be current by the test suite.

use crate::decision::Decision;
use crate::envelope::Envelope;
use crate::overrides::OverrideAnswer;

/// `(file name, schema)` for every top-level type on the wire or under a signature.
pub fn all() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        (
            "envelope.schema.json",
            serde_json::to_value(schemars::schema_for!(Envelope)).unwrap_or_default(),
        ),
        (
            "audit-receipt.schema.json",
            serde_json::to_value(schemars::schema_for!(crate::audit::AuditReceipt)).unwrap_or_default(),
        ),
        (
            "decision.schema.json",
            serde_json::to_value(schemars::schema_for!(Decision)).unwrap_or_default(),
        ),
        (
            "override-answer.schema.json",
            serde_json::to_value(schemars::schema_for!(OverrideAnswer)).unwrap_or_default(),
        ),
    ]
}

/// The schema files' contents, pretty-printed with a trailing newline.
pub fn rendered() -> Vec<(&'static str, String)> {
    all()
        .into_iter()
        .map(|(name, value)| {
            (
                name,
                format!("{}\n", serde_json::to_string_pretty(&value).unwrap_or_default()),
            )
        })
        .collect()
}

/// Test vectors: `(name, envelope)` with fixed ids and times, so their encodings are stable.
/// `schemas/vectors/<name>.msgpack` holds the encoding, `<name>.json` the decoded meaning.
pub fn vectors() -> Vec<(&'static str, crate::Envelope)> {
    use crate::*;
    let rid = RequestId::parse("mai.0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").unwrap_or_default();
    let envelope = |id: &str, producer, event| Envelope {
        schema: SCHEMA_VERSION,
        id: MessageId::parse(id).unwrap_or_default(),
        request_id: rid.clone(),
        producer,
        time_ms: 1_795_000_000_000,
        event,
    };
    let request = ExecutionRequest::new(Language::Python, "print('hello from airlock')\n")
        .args(["--n", "3"])
        .label("hello.py");
    let finding = Finding {
        rule_id: "B602".into(),
        category: Category::Vulnerability,
        severity: Level::Medium,
        confidence: Confidence::High,
        line: 3,
        column: 1,
        snippet: "subprocess.run(cmd, shell=True)".into(),
        explanation: "runs a command through the shell".into(),
        references: vec!["B602".into(), "CWE-78".into()],
    };
    let terminal = Terminal {
        outcome: Outcome::Finished,
        level: Some(Level::Low),
        findings: vec![],
        decision: Some(DecisionSummary {
            decision: "approved".into(),
            approver: Approver::Policy {
                rule: "policy: LOW is approved".into(),
            },
            quota: Some(TrustLevel::Unknown),
            limits: None,
            runtime: Some(Runtime::Runc),
            network: Some(NetworkMode::None),
            read_only_hosts: vec![],
            policy_version: None,
            execution_digest: None,
        }),
        exit_code: Some(0),
        stdout: b"hello from airlock\n".to_vec(),
        stderr: vec![],
        violation: None,
        usage: Some(Usage {
            wall_ms: 31,
            cpu_ms: 18,
            peak_memory_bytes: 9 << 20,
            peak_pids: 1,
            stdout_bytes: 19,
            stderr_bytes: 0,
        }),
        reason: None,
        refusal: None,
        files: vec![],
        files_unavailable: None,
    };
    let violation = Terminal {
        outcome: Outcome::Failed,
        exit_code: Some(137),
        stdout: vec![],
        violation: Some(Violation {
            kind: ViolationKind::Memory,
            detail: "killed by the kernel's OOM killer at the 256 MiB limit".into(),
            limit: Some(256 << 20),
            measured: Some(256 << 20),
        }),
        ..terminal.clone()
    };
    vec![
        (
            "submitted",
            envelope(
                "0193a1b2-0000-7000-8000-000000000001",
                Producer::Mai,
                Event::Submitted(request),
            ),
        ),
        (
            "refused",
            envelope(
                "0193a1b2-0000-7000-8000-000000000002",
                Producer::Executor,
                Event::Refused(Refusal {
                    reason: RefusalReason::BadSignature,
                    detail: "signature by airlock.local/gate+d7553265 does not verify".into(),
                    subject: format!("airlock.decision.{rid}"),
                    message_sha256: "00".repeat(32),
                }),
            ),
        ),
        (
            "output",
            envelope(
                "0193a1b2-0000-7000-8000-000000000003",
                Producer::Executor,
                Event::Output(OutputChunk {
                    stream: OutputStream::Stdout,
                    seq: 0,
                    data: b"hello\n".to_vec(),
                }),
            ),
        ),
        (
            "terminal-finished",
            envelope(
                "0193a1b2-0000-7000-8000-000000000004",
                Producer::Executor,
                Event::Terminal(Box::new(terminal)),
            ),
        ),
        (
            "terminal-memory-violation",
            envelope(
                "0193a1b2-0000-7000-8000-000000000005",
                Producer::Executor,
                Event::Terminal(Box::new(violation)),
            ),
        ),
        (
            "finding",
            envelope(
                "0193a1b2-0000-7000-8000-000000000006",
                Producer::OverrideGate,
                Event::OverrideAsked(OverrideAsked {
                    level: Level::Blocked,
                    explanation: "External python code rated BLOCKED".into(),
                    findings: vec![finding],
                    code_digest: CodeDigest::of(b"x"),
                    language: Language::Python,
                    origin: Origin::External,
                    code_preview: "import subprocess\n".into(),
                    inputs: vec![],
                    deadline_ms: 1_795_000_900_000,
                    ..OverrideAsked::display_only()
                }),
            ),
        ),
    ]
}
