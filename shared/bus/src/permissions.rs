//! What each role may publish and subscribe to, derived from the roles table. The NATS server
//! enforces these: they are how "only the auditor writes the audit log, only the gate issues
//! decisions, Mai only submits and reads results" holds even against a compromised service or a
//! prompt-injected Mai.
//!
//! Every user gets its own inbox prefix (`_INBOX_<user>`), so no user can read another's replies.
//! Only services may create or bind durable consumers, and each only its own; clients and
//! operators read streams by direct get and live subscription, so none of them can reshape a
//! service's consumer (its filter, its start position) or take its deliveries.

use crate::connect::inbox_prefix;
use airlock_protocol::EventKind;
use airlock_protocol::roles::{Role, RoleKind, ServiceRole};
use airlock_protocol::subjects::{
    AUDIT_PREFIX, AUDIT_STREAM, EVENTS_STREAM, GATE_OPERATOR_ENDPOINTS, STATUS_PREFIX, client_receipt_filter,
    client_submit_filter, dead_letter_subject,
};

/// A user's permissions, as NATS subject patterns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub publish: Vec<String>,
    pub subscribe: Vec<String>,
    /// Subjects taken back out of `subscribe` (the server's `deny` list).
    pub deny_subscribe: Vec<String>,
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

    /// Whether these permissions let a user subscribe to `subject`, given a matcher of NATS
    /// subject patterns.
    pub fn may_subscribe(&self, subject: &str, matches: impl Fn(&str, &str) -> bool) -> bool {
        self.subscribe.iter().any(|p| matches(p, subject)) && !self.deny_subscribe.iter().any(|p| matches(p, subject))
    }
}

fn inbox(user: &str) -> String {
    format!("{}.>", inbox_prefix(user))
}

/// What a durable pull consumer `durable` on `stream` needs: its own name in every subject, so
/// a service can bind only its own consumer.
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

/// Reading a stream by direct get and stream info only: no consumers.
fn stream_getter(stream: &str) -> Vec<String> {
    vec![
        format!("$JS.API.STREAM.INFO.{stream}"),
        format!("$JS.API.STREAM.MSG.GET.{stream}"),
        format!("$JS.API.DIRECT.GET.{stream}"),
        format!("$JS.API.DIRECT.GET.{stream}.>"),
    ]
}

/// What using key-value bucket `bucket` needs (its watchers and key listings are ephemeral
/// consumers on the bucket's own stream, which nobody else can read).
fn bucket_user(bucket: &str) -> Vec<String> {
    let stream = format!("KV_{bucket}");
    let mut subjects = stream_getter(&stream);
    subjects.extend([
        format!("$KV.{bucket}.>"),
        format!("$JS.API.CONSUMER.CREATE.{stream}"),
        format!("$JS.API.CONSUMER.CREATE.{stream}.*"),
        format!("$JS.API.CONSUMER.CREATE.{stream}.*.>"),
        format!("$JS.API.CONSUMER.INFO.{stream}.*"),
        format!("$JS.API.CONSUMER.DELETE.{stream}.*"),
        format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.*"),
        format!("$JS.FC.{stream}.>"),
    ]);
    subjects
}

fn events(kinds: &[EventKind]) -> Vec<String> {
    kinds.iter().map(|k| k.subject_filter()).collect()
}

/// The permissions of a role's user (for client roles, see [`client`]).
pub fn of_role(role: &Role) -> Permissions {
    match role.kind {
        RoleKind::Admin => {
            let mut p = Permissions::default();
            p.publish([">".to_owned()]).subscribe([">".to_owned()]);
            p
        }
        RoleKind::Client => client(role.user),
        RoleKind::Operator => operator(role),
        RoleKind::Service => match role.service() {
            Some(service) => service_user(service),
            None => Permissions::default(),
        },
    }
}

/// A client user: submits under its own name, reads its own results (terminal events, output,
/// usage, the kernel's record, receipts) and nobody else's: every one of those subjects carries the request id, whose
/// client part is a token the permission names.
pub fn client(user: &str) -> Permissions {
    let own = [
        EventKind::Terminal,
        EventKind::Output,
        EventKind::Usage,
        EventKind::Progress,
        EventKind::Observed,
    ];
    let mut p = Permissions::default();
    p.subscribe([inbox(user)])
        .publish([
            client_submit_filter(user),
            EventKind::CancelRequested.client_filter(user),
        ])
        // Reading back its own terminal event and latest stage (after a reconnect, or when
        // following a request submitted elsewhere) and its receipts.
        .publish(
            [EventKind::Terminal, EventKind::Progress, EventKind::Observed]
                .map(|kind| format!("$JS.API.DIRECT.GET.{EVENTS_STREAM}.{}.{user}.*", kind.subject_prefix())),
        )
        .publish([format!(
            "$JS.API.DIRECT.GET.{AUDIT_STREAM}.{}",
            client_receipt_filter(user)
        )])
        .subscribe(own.map(|kind| kind.client_filter(user)))
        .subscribe([client_receipt_filter(user)]);
    p
}

/// The operator: answers overrides, reads everything, asks services for their status; reshapes
/// nothing (no consumer of its own on the pipeline's streams).
fn operator(role: &Role) -> Permissions {
    let mut p = Permissions::default();
    p.subscribe([inbox(role.user)])
        .publish(events(role.publishes))
        .publish(GATE_OPERATOR_ENDPOINTS.map(str::to_owned))
        .publish([
            format!("{STATUS_PREFIX}.>"),
            "$SRV.>".to_owned(),
            "$JS.API.INFO".to_owned(),
            "$JS.API.STREAM.NAMES".to_owned(),
            "$JS.API.STREAM.LIST".to_owned(),
        ])
        .publish(stream_getter(EVENTS_STREAM))
        .publish(stream_getter(AUDIT_STREAM))
        // Reading (never changing) the services' consumers: `airlock status` shows each one's backlog.
        .publish([format!("$JS.API.CONSUMER.INFO.{EVENTS_STREAM}.*")])
        .subscribe(["airlock.>".to_owned()]);
    // Services' own endpoints are not the operator's to receive: with `allow_responses`, a user
    // that receives a request may answer it, and a resolve request answered by anyone but an
    // executor would rate packages it never read.
    p.deny_subscribe.extend(
        airlock_protocol::roles::services()
            .flat_map(|s| s.endpoints.iter())
            .filter(|e| !GATE_OPERATOR_ENDPOINTS.contains(e))
            .map(|e| (*e).to_owned()),
    );
    p
}

fn service_user(service: &ServiceRole) -> Permissions {
    let role = &service.role;
    let mut p = Permissions::default();
    p.subscribe([inbox(role.user)])
        .publish(durable_consumer(EVENTS_STREAM, service.consumes.durable))
        .publish(events(role.publishes))
        .publish([dead_letter_subject(role.user, ">")])
        .subscribe(["$SRV.>".to_owned(), service.status_subject()])
        .subscribe(service.endpoints.iter().map(|e| (*e).to_owned()))
        .publish(service.asks.iter().map(|e| (*e).to_owned()));
    if let Some(bucket) = service.bucket {
        p.publish(bucket_user(bucket));
    }
    if role.user == airlock_protocol::roles::AUDITOR.role.user {
        // The audit log's only writer, and the reader of what it wrote when it restarts.
        p.publish([format!("{AUDIT_PREFIX}.>")])
            .publish(stream_getter(AUDIT_STREAM));
    }
    if role.user == airlock_protocol::roles::ASSESSOR.role.user {
        // It counts each client's requests in flight until their terminal events.
        p.subscribe(events(&[EventKind::Terminal]));
    }
    if role.user == airlock_protocol::roles::EXECUTOR.role.user {
        // It starts programs only while the audit log keeps up (`[auditor] required`), which it
        // reads from the entries the auditor publishes: through an ephemeral consumer of its own
        // on the audit stream, which reads and reshapes nothing else.
        p.publish(ephemeral_reader(AUDIT_STREAM));
        // Before it runs an interrupted request again, it looks whether the request already
        // ended (a terminal published whose record update was lost): terminals only.
        p.publish([format!(
            "$JS.API.DIRECT.GET.{EVENTS_STREAM}.{}.>",
            EventKind::Terminal.subject_prefix()
        )]);
        // Every executor hears every cancellation (the one running the request stops it), and
        // looks for one stored before it starts a run.
        p.subscribe(events(&[EventKind::CancelRequested]));
        p.publish([format!(
            "$JS.API.DIRECT.GET.{EVENTS_STREAM}.{}.>",
            EventKind::CancelRequested.subject_prefix()
        )]);
    }
    p
}

/// Reading a stream through ephemeral consumers (an ordered consumer): no durable one, no
/// stream changes.
fn ephemeral_reader(stream: &str) -> Vec<String> {
    vec![
        format!("$JS.API.STREAM.INFO.{stream}"),
        format!("$JS.API.CONSUMER.CREATE.{stream}.*"),
        format!("$JS.API.CONSUMER.CREATE.{stream}.*.>"),
        format!("$JS.API.CONSUMER.INFO.{stream}.*"),
        format!("$JS.API.CONSUMER.DELETE.{stream}.*"),
        format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.*"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_protocol::roles::{self, ROLES};

    #[test]
    fn only_the_auditor_publishes_audit_and_only_the_gate_decides() {
        for role in ROLES {
            let p = of_role(&role);
            let audit = p.publish.iter().any(|s| s.starts_with("airlock.audit"));
            let decision = p.publish.iter().any(|s| s.starts_with("airlock.decision"));
            assert_eq!(audit, role.user == "auditor", "{} audit", role.user);
            assert_eq!(decision, role.user == "gate", "{} decision", role.user);
        }
        assert!(of_role(&roles::ADMIN).publish.contains(&">".to_owned()));
    }

    #[test]
    fn clients_submit_and_cancel_under_their_own_name_and_read_only() {
        let p = client("mai");
        assert!(p.publish.iter().all(|s| s == "airlock.submit.mai.*"
            || s == "airlock.cancel.mai.*"
            || s.starts_with("$JS.API.DIRECT.GET.")));
        // Every subject a client reads names it.
        for subject in p.subscribe.iter().chain(&p.publish) {
            assert!(
                subject.contains(".mai.") || subject.starts_with("_INBOX_mai."),
                "{subject} is not mai's own"
            );
        }
        assert!(
            !p.subscribe
                .iter()
                .any(|s| s.contains("decision") || s.contains("override"))
        );
        assert!(client("batch").publish.contains(&"airlock.submit.batch.*".to_owned()));
        assert!(
            p.publish
                .contains(&"$JS.API.DIRECT.GET.AIRLOCK.airlock.progress.mai.*".to_owned()),
            "a client reads its request's latest stage back from the stream"
        );
    }

    #[test]
    fn the_chat_bridge_publishes_answers_and_chat_refusals_and_nothing_else_on_the_events_stream() {
        let p = of_role(&roles::CHAT_BRIDGE.role);
        let events: Vec<&String> = p.publish.iter().filter(|s| s.starts_with("airlock.")).collect();
        assert_eq!(
            events,
            [
                "airlock.override.answer.>",
                "airlock.chat.refused.>",
                "airlock.dead.bridge.>"
            ],
            "the bridge's event subjects"
        );
        // It reads override requests and terminal events only through its own durable consumer.
        assert!(
            p.publish
                .contains(&"$JS.API.CONSUMER.MSG.NEXT.AIRLOCK.chat-bridge".to_owned())
        );
        assert!(
            !p.subscribe
                .iter()
                .any(|s| s.starts_with("airlock.") && !s.starts_with("airlock.status."))
        );
    }

    #[test]
    fn only_the_assessor_asks_executors_to_resolve_packages_and_only_executors_answer() {
        let endpoint = airlock_protocol::packages::RESOLVE_ENDPOINT.to_owned();
        let exact = |p: &str, s: &str| p == s || p == ">" || (p.ends_with(".>") && s.starts_with(&p[..p.len() - 1]));
        for role in ROLES {
            let p = of_role(&role);
            let asks = p.publish.iter().any(|s| exact(s, &endpoint));
            let answers = p.may_subscribe(&endpoint, exact);
            if role.kind == RoleKind::Admin {
                continue;
            }
            assert_eq!(asks, role.user == "assessor", "{} asking", role.user);
            assert_eq!(answers, role.user == "executor", "{} receiving", role.user);
        }
    }

    #[test]
    fn nobody_but_services_creates_consumers_on_the_events_stream() {
        for role in ROLES {
            let p = of_role(&role);
            let creates = p
                .publish
                .iter()
                .any(|s| s.starts_with(&format!("$JS.API.CONSUMER.CREATE.{EVENTS_STREAM}")));
            // (The admin user has `>`: it is the stack's own set-up user, used by no client.)
            assert_eq!(creates, role.kind == RoleKind::Service, "{}", role.user);
        }
    }
}
