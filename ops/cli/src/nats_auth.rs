//! NATS users and what each may do. The server enforces these: they are how "only the auditor
//! writes the audit log, only the gate issues decisions, Mai only submits and reads results"
//! holds even against a compromised service.
//!
//! Every user gets its own inbox prefix (`_INBOX_<user>`), so no user can read another's replies.

use airlock_protocol::EventKind;
use airlock_protocol::subjects::{
    AUDIT_PREFIX, AUDIT_RECEIPT_PREFIX, AUDIT_STREAM, AUDITOR_BUCKET, EVENTS_STREAM, EXECUTOR_BUCKET, GATE_BUCKET,
    GATE_PENDING_ENDPOINT,
};
use std::path::Path;

/// Every user of a stack. `admin` is the stack's own set-up user (streams, buckets).
pub const USERS: [&str; 7] = ["admin", "mai", "operator", "assessor", "gate", "executor", "auditor"];

/// A user's permissions, as NATS subject patterns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub publish: Vec<String>,
    pub subscribe: Vec<String>,
}

impl Permissions {
    fn publish(&mut self, subjects: impl IntoIterator<Item = String>) -> &mut Self {
        self.publish.extend(subjects);
        self
    }
    fn subscribe(&mut self, subjects: impl IntoIterator<Item = String>) -> &mut Self {
        self.subscribe.extend(subjects);
        self
    }
}

fn inbox(user: &str) -> String {
    format!("{}.>", airlock_bus::connect::inbox_prefix(user))
}

/// What a durable pull consumer `durable` on `stream` needs.
fn durable_consumer(stream: &str, durable: &str) -> Vec<String> {
    vec![
        format!("$JS.API.STREAM.INFO.{stream}"),
        format!("$JS.API.CONSUMER.INFO.{stream}.{durable}"),
        format!("$JS.API.CONSUMER.CREATE.{stream}.{durable}"),
        format!("$JS.API.CONSUMER.CREATE.{stream}.{durable}.>"),
        format!("$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{durable}"),
        format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}"),
        format!("$JS.ACK.{stream}.{durable}.>"),
    ]
}

/// What reading a stream with ephemeral ordered consumers and direct gets needs.
fn stream_reader(stream: &str) -> Vec<String> {
    vec![
        format!("$JS.API.STREAM.INFO.{stream}"),
        format!("$JS.API.STREAM.MSG.GET.{stream}"),
        format!("$JS.API.DIRECT.GET.{stream}"),
        format!("$JS.API.DIRECT.GET.{stream}.>"),
        format!("$JS.API.CONSUMER.CREATE.{stream}"),
        format!("$JS.API.CONSUMER.CREATE.{stream}.*.>"),
        format!("$JS.API.CONSUMER.CREATE.{stream}.*"),
        format!("$JS.API.CONSUMER.INFO.{stream}.*"),
        format!("$JS.FC.{stream}.>"),
    ]
}

/// What using key-value bucket `bucket` needs.
fn bucket_user(bucket: &str) -> Vec<String> {
    let stream = format!("KV_{bucket}");
    let mut subjects = stream_reader(&stream);
    subjects.push(format!("$KV.{bucket}.>"));
    subjects.push(format!("$JS.API.CONSUMER.DELETE.{stream}.*"));
    subjects
}

/// What answering the NATS service API needs.
fn service_api(name: &str) -> Vec<String> {
    vec!["$SRV.>".to_owned(), format!("airlock.status.{name}")]
}

fn events(kinds: &[EventKind]) -> Vec<String> {
    kinds.iter().map(|k| k.subject_filter()).collect()
}

pub fn permissions(user: &str) -> Permissions {
    let mut p = Permissions::default();
    p.subscribe([inbox(user)]);
    match user {
        "admin" => {
            p.publish([">".to_owned()]).subscribe([">".to_owned()]);
        }
        "mai" => {
            p.publish(events(&[EventKind::Submitted]))
                .publish([
                    format!(
                        "$JS.API.DIRECT.GET.{EVENTS_STREAM}.{}.>",
                        EventKind::Terminal.subject_prefix()
                    ),
                    format!("$JS.API.DIRECT.GET.{AUDIT_STREAM}.{AUDIT_RECEIPT_PREFIX}.>"),
                ])
                .subscribe(events(&[EventKind::Terminal, EventKind::Output, EventKind::Usage]))
                .subscribe([format!("{AUDIT_RECEIPT_PREFIX}.*")]);
        }
        "operator" => {
            p.publish(events(&[EventKind::OverrideAnswered]))
                .publish([
                    GATE_PENDING_ENDPOINT.to_owned(),
                    "airlock.status.>".to_owned(),
                    "$SRV.>".to_owned(),
                ])
                .publish([
                    "$JS.API.INFO".to_owned(),
                    "$JS.API.STREAM.NAMES".to_owned(),
                    "$JS.API.STREAM.LIST".to_owned(),
                ])
                .publish(stream_reader(EVENTS_STREAM))
                .publish(stream_reader(AUDIT_STREAM))
                .subscribe(["airlock.>".to_owned()]);
        }
        "assessor" => {
            p.publish(durable_consumer(EVENTS_STREAM, "assessor"))
                .publish(events(&[EventKind::Assessed, EventKind::Terminal, EventKind::Refused]))
                .subscribe(service_api("airlock-assessor"));
        }
        "gate" => {
            p.publish(durable_consumer(EVENTS_STREAM, "override-gate"))
                .publish(bucket_user(GATE_BUCKET))
                .publish(events(&[
                    EventKind::OverrideAsked,
                    EventKind::Decided,
                    EventKind::Terminal,
                    EventKind::Refused,
                ]))
                .subscribe(service_api("airlock-override-gate"))
                .subscribe([GATE_PENDING_ENDPOINT.to_owned()]);
        }
        "executor" => {
            p.publish(durable_consumer(EVENTS_STREAM, "executor"))
                .publish(bucket_user(EXECUTOR_BUCKET))
                .publish(events(&[
                    EventKind::ExecStarted,
                    EventKind::Output,
                    EventKind::Usage,
                    EventKind::Activity,
                    EventKind::Egress,
                    EventKind::Terminal,
                    EventKind::Refused,
                ]))
                .subscribe(service_api("airlock-executor"));
        }
        "auditor" => {
            p.publish(durable_consumer(EVENTS_STREAM, "auditor"))
                .publish(bucket_user(AUDITOR_BUCKET))
                .publish(stream_reader(AUDIT_STREAM))
                .publish([format!("{AUDIT_PREFIX}.>")])
                .subscribe(service_api("airlock-auditor"));
        }
        _ => {}
    }
    p
}

/// An nkey user: the public key goes in the server config, the seed stays in `$AIRLOCK_HOME`.
pub struct UserKey {
    pub user: String,
    pub public_key: String,
}

/// Reads the user's seed, or creates one (mode 0600).
pub fn load_or_create_user(user: &str, seed_file: &Path) -> anyhow::Result<UserKey> {
    let seed = match std::fs::read_to_string(seed_file) {
        Ok(s) => s.trim().to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let pair = nkeys::KeyPair::new_user();
            let seed = pair.seed()?;
            if let Some(dir) = seed_file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            airlock_protocol::keys::write_secret(seed_file, format!("{seed}\n").as_bytes())?;
            seed
        }
        Err(e) => return Err(e.into()),
    };
    let pair = nkeys::KeyPair::from_seed(&seed)?;
    Ok(UserKey {
        user: user.to_owned(),
        public_key: pair.public_key(),
    })
}

fn quoted(list: &[String]) -> String {
    list.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
}

/// The `authorization` block of a nats-server config for these users.
pub fn authorization_block(users: &[UserKey]) -> String {
    let mut out = String::from("authorization {\n  users: [\n");
    for user in users {
        let p = permissions(&user.user);
        out.push_str(&format!(
            "    # {}\n    {{ nkey: {:?}, permissions: {{ publish: {{ allow: [{}] }}, subscribe: {{ allow: [{}] }}, allow_responses: true }} }}\n",
            user.user,
            user.public_key,
            quoted(&p.publish),
            quoted(&p.subscribe)
        ));
    }
    out.push_str("  ]\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_auditor_publishes_audit_and_only_the_gate_decides() {
        for user in USERS {
            let p = permissions(user);
            let audit = p.publish.iter().any(|s| s.starts_with("airlock.audit"));
            let decision = p.publish.iter().any(|s| s.starts_with("airlock.decision"));
            assert_eq!(audit, user == "auditor", "{user} audit");
            assert_eq!(decision, user == "gate", "{user} decision");
        }
        assert!(permissions("admin").publish.contains(&">".to_owned()));
    }

    #[test]
    fn mai_submits_and_reads_only() {
        let p = permissions("mai");
        assert!(
            p.publish
                .iter()
                .all(|s| s.starts_with("airlock.submit.") || s.starts_with("$JS.API.DIRECT.GET."))
        );
        assert!(
            !p.subscribe
                .iter()
                .any(|s| s.contains("decision") || s.contains("override"))
        );
    }
}
