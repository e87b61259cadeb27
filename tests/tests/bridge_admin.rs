//! `airlock bridge test` against a real Synapse catches the mistakes a new admin makes, each with
//! a one-line reason that says what to do, and exits non-zero: a token of another user than
//! `user_id`, an end-to-end encrypted room (the main one or an escalation room), approvers (of
//! `[bridge.matrix]` or of the gate's policy) and escalation contacts who are not in their room,
//! and a room the bot is not invited to. The correct setup passes every check, and every check is
//! listed either way. (Slack's and Discord's token checks run against their stand-ins in
//! `services/chat-bridge/tests/wiring.rs`.)

#[path = "../bridge/mod.rs"]
mod bridge;

use bridge::matrix::MatrixUser;
use bridge::synapse::Synapse;
use std::process::Command;

const BOT: &str = "@airlock:localhost";
const ALICE: &str = "@alice:localhost";
const BOB: &str = "@bob:localhost";
const CAROL: &str = "@carol:localhost";

struct Admin {
    synapse: Synapse,
    bot: MatrixUser,
    alice: MatrixUser,
}

/// A Synapse with the bot, alice, bob and carol registered; the bot and alice logged in.
async fn homeserver() -> Admin {
    let synapse = tokio::task::spawn_blocking(Synapse::start).await.expect("synapse");
    for name in ["airlock", "alice", "bob", "carol"] {
        synapse.register(name, &format!("pw-{name}-1"));
    }
    let bot = MatrixUser::login(&synapse.url, "airlock", "pw-airlock-1").await;
    let alice = MatrixUser::login(&synapse.url, "alice", "pw-alice-1").await;
    Admin { synapse, bot, alice }
}

/// What the admin would write: `[bridge.matrix]` with `room` and `approvers`, the token in
/// `token`, and `more` (the gate's policy).
struct Setup<'a> {
    token: &'a str,
    room: &'a str,
    approvers: &'a [&'a str],
    more: String,
}

struct Outcome {
    success: bool,
    lines: Vec<String>,
    text: String,
}

impl Outcome {
    /// The line of the check whose name contains `name`.
    fn line(&self, name: &str) -> &str {
        self.lines
            .iter()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no check {name:?} listed:\n{}", self.text))
    }

    fn ok(&self, name: &str) -> &str {
        let line = self.line(name);
        assert!(line.starts_with("ok "), "{name} did not pass:\n{}", self.text);
        line
    }

    fn failed(&self, name: &str) -> &str {
        let line = self.line(name);
        assert!(line.starts_with("FAILED "), "{name} did not fail:\n{}", self.text);
        line
    }
}

impl Admin {
    fn bridge_test(&self, setup: Setup<'_>) -> Outcome {
        let config = format!(
            "{}\n{}",
            bridge::matrix_section(&self.synapse, BOT, setup.token, setup.room, setup.approvers),
            setup.more
        );
        let home = airlock_tests::init_home(&config);
        let out = Command::new(airlock_tests::airlock_bin())
            .arg("--home")
            .arg(home.path())
            .args(["bridge", "test"])
            .output()
            .expect("airlock bridge test");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!("airlock bridge test:\n{text}");
        Outcome {
            success: out.status.success(),
            lines: String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned)
                .collect(),
            text,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_correct_setup_passes_every_check() {
    let admin = homeserver().await;
    // Bob is invited but has not joined yet: he will see the room's requests once he does.
    let room = admin.alice.create_room(&[BOT, BOB]).await;
    let escalations = admin.alice.create_room(&[BOT, CAROL]).await;
    let outcome = admin.bridge_test(Setup {
        token: &admin.bot.token,
        room: &room,
        approvers: &[ALICE, BOB],
        more: format!(
            "[gate.policy.approvers.matrix]\nblocked = [\"{ALICE}\"]\n[gate.policy.escalation.matrix]\nmention = [\"{CAROL}\"]\nplace = \"{escalations}\"\n"
        ),
    });
    assert!(outcome.success, "the correct setup failed:\n{}", outcome.text);
    assert!(outcome.ok("matrix token").contains(BOT), "{}", outcome.text);
    for room in [&room, &escalations] {
        outcome.ok(&format!("{room}: the bot can join"));
        outcome.ok(&format!("{room}: not end-to-end encrypted"));
        outcome.ok(&format!("{room}: the bot may post"));
    }
    let members = outcome.ok(&format!("room {room}: every approver is a member"));
    assert!(members.contains("not yet joined: @bob:localhost"), "{members}");
    outcome.ok(&format!(
        "escalation room {escalations}: every escalation mention is a member"
    ));
    outcome.ok(&format!("matrix {room}: test message"));
    assert!(outcome.text.contains("all 10 checks passed"), "{}", outcome.text);
    // The test message is in the room, as the approvers see it.
    admin
        .alice
        .wait_for(&room, "the test message", |e| {
            e["sender"] == BOT && bridge::matrix::body(e).contains("Airlock test message")
        })
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_of_another_user_than_user_id_fails() {
    let admin = homeserver().await;
    let room = admin.alice.create_room(&[BOT, BOB]).await;
    // The admin stored alice's token (the one they were logged in with) as the bot's.
    let outcome = admin.bridge_test(Setup {
        token: &admin.alice.token,
        room: &room,
        approvers: &[ALICE],
        more: String::new(),
    });
    assert!(!outcome.success, "passed with alice's token:\n{}", outcome.text);
    let line = outcome.failed("matrix token");
    assert!(
        line.contains("belongs to @alice:localhost, not to user_id @airlock:localhost")
            && line.contains("put @airlock:localhost's token in that file"),
        "{line}"
    );
    // A token the homeserver does not know at all says so.
    let outcome = admin.bridge_test(Setup {
        token: "syt_not_a_token",
        room: &room,
        approvers: &[ALICE],
        more: String::new(),
    });
    assert!(!outcome.success, "{}", outcome.text);
    let line = outcome.failed("matrix token");
    assert!(
        line.contains("does not accept the access token") && line.contains("M_UNKNOWN_TOKEN"),
        "{line}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_encrypted_room_or_escalation_room_fails() {
    let admin = homeserver().await;
    let encrypted = admin.alice.create_encrypted_room(&[BOT, BOB]).await;
    let outcome = admin.bridge_test(Setup {
        token: &admin.bot.token,
        room: &encrypted,
        approvers: &[ALICE],
        more: String::new(),
    });
    assert!(!outcome.success, "passed with an encrypted room:\n{}", outcome.text);
    let line = outcome.failed(&format!("{encrypted}: not end-to-end encrypted"));
    assert!(
        line.contains("end-to-end encrypted") && line.contains("create a new room with encryption off"),
        "{line}"
    );
    // The other checks are still made and listed.
    outcome.ok("matrix token");
    outcome.ok(&format!("{encrypted}: every approver is a member"));

    // The main room is fine, the escalation room is encrypted.
    let room = admin.alice.create_room(&[BOT, BOB]).await;
    let escalations = admin.alice.create_encrypted_room(&[BOT, BOB]).await;
    let outcome = admin.bridge_test(Setup {
        token: &admin.bot.token,
        room: &room,
        approvers: &[ALICE],
        more: format!("[gate.policy.escalation.matrix]\nplace = \"{escalations}\"\n"),
    });
    assert!(!outcome.success, "{}", outcome.text);
    outcome.ok(&format!("room {room}: not end-to-end encrypted"));
    outcome.failed(&format!("escalation room {escalations}: not end-to-end encrypted"));
}

#[tokio::test(flavor = "multi_thread")]
async fn approvers_who_are_not_in_the_room_fail() {
    let admin = homeserver().await;
    let room = admin.alice.create_room(&[BOT, BOB]).await;
    let escalations = admin.alice.create_room(&[BOT]).await;
    // Carol is an approver in [bridge.matrix] but was never invited; dave is in the gate's
    // per-level list and is in no room; bob, the escalation contact, is not in the escalation room.
    let outcome = admin.bridge_test(Setup {
        token: &admin.bot.token,
        room: &room,
        approvers: &[ALICE, BOB, CAROL],
        more: format!(
            "[gate.policy.approvers.matrix]\nhigh = [\"{ALICE}\", \"@dave:localhost\"]\n[gate.policy.escalation.matrix]\nmention = [\"{BOB}\"]\nplace = \"{escalations}\"\n"
        ),
    });
    assert!(
        !outcome.success,
        "passed with approvers outside the room:\n{}",
        outcome.text
    );
    let line = outcome.failed(&format!("room {room}: every approver is a member"));
    assert!(
        line.contains("@carol:localhost, @dave:localhost are not in the room")
            && !line.contains(ALICE)
            && !line.contains(BOB)
            && line.contains(&format!("invite @carol:localhost, @dave:localhost to {room}")),
        "{line}"
    );
    let line = outcome.failed(&format!(
        "escalation room {escalations}: every escalation mention is a member"
    ));
    assert!(line.contains("@bob:localhost is not in the room"), "{line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_room_the_bot_is_not_invited_to_fails() {
    let admin = homeserver().await;
    let room = admin.alice.create_room(&[BOB]).await;
    let outcome = admin.bridge_test(Setup {
        token: &admin.bot.token,
        room: &room,
        approvers: &[ALICE],
        more: String::new(),
    });
    assert!(!outcome.success, "{}", outcome.text);
    let line = outcome.failed(&format!("{room}: the bot can join"));
    assert!(line.contains("M_FORBIDDEN") && line.contains("invite it"), "{line}");
    outcome.failed(&format!("matrix {room}: test message"));
}
