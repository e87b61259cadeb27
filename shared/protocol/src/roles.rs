//! Who is who in a stack: one row per role.
//!
//! A role's NATS user, its service name, config section, durable consumer, key-value bucket,
//! the events it publishes and the status subject it answers on all live here, and everything
//! else derives from this table: the NATS permissions the server enforces
//! (`airlock_bus::permissions`), the checks on who may have produced an event
//! ([`may_produce`]), the consumers each service binds to, `airlock serve`, and `airlock status`.
//! Adding a service is adding a row here and a crate.

use crate::envelope::Producer;
use crate::event::EventKind;
use crate::subjects;

/// What kind of party a role is; it decides the shape of its permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleKind {
    /// The stack's own set-up user: creates streams and buckets, nothing else uses it.
    Admin,
    /// Submits requests and reads their results (Mai, through the CLI or a client library).
    Client,
    /// A human operator: reads everything, answers overrides, reshapes nothing.
    Operator,
    /// One of the pipeline's services.
    Service,
}

/// How a service consumes the events stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Consumption {
    /// Durable consumer name on the events stream.
    pub durable: &'static str,
    /// The event kinds it reads; empty means every event (the auditor).
    pub kinds: &'static [EventKind],
}

/// When `airlock up` starts a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Every stack runs it.
    Always,
    /// Only when its config section exists (a chat bridge has nothing to do without a chat).
    WhenConfigured,
}

/// A row of the table that is a service: its role, and its identity on the bus. A role that
/// runs no service (a client, the operator) is a [`Role`] and never a `ServiceRole`, so a
/// service's name, consumer and config section are there by type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceRole {
    pub role: Role,
    /// Name in the NATS service API (`$SRV.PING.<name>`) and in logs and traces.
    pub name: &'static str,
    pub description: &'static str,
    /// The `airlock serve <command>` word.
    pub command: &'static str,
    /// Its section of `airlock.toml`.
    pub config_section: &'static str,
    pub consumes: Consumption,
    /// Its key-value bucket of durable state, if it keeps any.
    pub bucket: Option<&'static str>,
    /// Request-reply endpoints it serves besides the service API.
    pub endpoints: &'static [&'static str],
    /// Other services' endpoints it may ask (the assessor asks an executor to resolve packages).
    pub asks: &'static [&'static str],
    pub start: Start,
}

impl ServiceRole {
    /// `airlock.status.<name>`: the endpoint answering with the service's counters.
    pub fn status_subject(&self) -> String {
        format!("{}.{}", subjects::STATUS_PREFIX, self.name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Role {
    /// The NATS user name: also its credentials file (`creds/<user>.nk`), its inbox prefix
    /// (`_INBOX_<user>`) and its dead-letter subjects (`airlock.dead.<user>.*`).
    pub user: &'static str,
    pub kind: RoleKind,
    /// What its envelopes say produced them; `None` for roles that publish no events.
    pub producer: Option<Producer>,
    /// The event kinds it may publish.
    pub publishes: &'static [EventKind],
}

impl Role {
    /// Its service's row, when the role runs one.
    pub fn service(&self) -> Option<&'static ServiceRole> {
        SERVICES.iter().find(|s| s.role.user == self.user)
    }
}

pub const ADMIN: Role = Role {
    user: "admin",
    kind: RoleKind::Admin,
    producer: None,
    publishes: &[],
};

/// The default client user. A stack may have more (`[stack] clients`), each with Mai's rights
/// under its own name.
pub const MAI: Role = Role {
    user: "mai",
    kind: RoleKind::Client,
    producer: Some(Producer::Mai),
    publishes: &[EventKind::Submitted, EventKind::CancelRequested],
};

pub const OPERATOR: Role = Role {
    user: "operator",
    kind: RoleKind::Operator,
    producer: Some(Producer::Operator),
    publishes: &[EventKind::OverrideAnswered],
};

pub const ASSESSOR: ServiceRole = ServiceRole {
    role: Role {
        user: "assessor",
        kind: RoleKind::Service,
        producer: Some(Producer::Assessor),
        publishes: &[
            EventKind::Assessed,
            EventKind::Terminal,
            EventKind::Refused,
            EventKind::Progress,
        ],
    },
    name: "airlock-assessor",
    description: "Rates code before it runs",
    command: "assessor",
    config_section: "assessor",
    consumes: Consumption {
        durable: "assessor",
        kinds: &[EventKind::Submitted],
    },
    bucket: Some(subjects::ASSESSOR_BUCKET),
    endpoints: &[],
    asks: &[crate::packages::RESOLVE_ENDPOINT],
    start: Start::Always,
};

pub const GATE: ServiceRole = ServiceRole {
    role: Role {
        user: "gate",
        kind: RoleKind::Service,
        producer: Some(Producer::OverrideGate),
        publishes: &[
            EventKind::OverrideAsked,
            EventKind::Decided,
            EventKind::Terminal,
            EventKind::Refused,
            EventKind::ApprovalRevoked,
            EventKind::Progress,
        ],
    },
    name: "airlock-override-gate",
    description: "Signs execution decisions",
    command: "override-gate",
    config_section: "gate",
    consumes: Consumption {
        durable: "override-gate",
        kinds: &[
            EventKind::Assessed,
            EventKind::OverrideAnswered,
            EventKind::CancelRequested,
            EventKind::ChatRefused,
        ],
    },
    bucket: Some(subjects::GATE_BUCKET),
    endpoints: &subjects::GATE_OPERATOR_ENDPOINTS,
    asks: &[],
    start: Start::Always,
};

pub const EXECUTOR: ServiceRole = ServiceRole {
    role: Role {
        user: "executor",
        kind: RoleKind::Service,
        producer: Some(Producer::Executor),
        publishes: &[
            EventKind::ExecStarted,
            EventKind::Output,
            EventKind::Usage,
            EventKind::Activity,
            EventKind::Observed,
            EventKind::Egress,
            EventKind::Terminal,
            EventKind::Refused,
            EventKind::Progress,
        ],
    },
    name: "airlock-executor",
    description: "Runs approved code in hardened containers",
    command: "executor",
    config_section: "executor",
    consumes: Consumption {
        durable: "executor",
        kinds: &[EventKind::Decided],
    },
    bucket: Some(subjects::EXECUTOR_BUCKET),
    endpoints: &[crate::packages::RESOLVE_ENDPOINT],
    asks: &[],
    start: Start::Always,
};

pub const AUDITOR: ServiceRole = ServiceRole {
    role: Role {
        user: "auditor",
        kind: RoleKind::Service,
        producer: Some(Producer::Auditor),
        // The auditor publishes no request events: it writes the audit stream, whose subjects are
        // its alone (see `airlock_bus::permissions`).
        publishes: &[],
    },
    name: "airlock-auditor",
    description: "The audit log's only writer",
    command: "auditor",
    config_section: "auditor",
    consumes: Consumption {
        durable: "auditor",
        kinds: &[],
    },
    bucket: Some(subjects::AUDITOR_BUCKET),
    endpoints: &[],
    asks: &[],
    start: Start::Always,
};

/// The chat bridge's key-value bucket: what it posted where, its chat sync positions, and the
/// interactions it has seen (so that a replayed one is refused).
pub const BRIDGE_BUCKET: &str = "airlock_bridge";

/// The chat bridge carries override requests to team chats and humans' answers back. It decides
/// nothing: it reads override requests and terminal events, and publishes answers (signed with
/// its own key, which the gate trusts per chat system and checks against its policy).
pub const CHAT_BRIDGE: ServiceRole = ServiceRole {
    role: Role {
        user: "bridge",
        kind: RoleKind::Service,
        producer: Some(Producer::ChatBridge),
        publishes: &[EventKind::OverrideAnswered, EventKind::ChatRefused],
    },
    name: "airlock-chat-bridge",
    description: "Carries override requests to team chats and humans' answers back",
    command: "chat-bridge",
    config_section: "bridge",
    consumes: Consumption {
        durable: "chat-bridge",
        // `observed` for the one-line kernel record the final edit shows.
        kinds: &[EventKind::OverrideAsked, EventKind::Observed, EventKind::Terminal],
    },
    bucket: Some(BRIDGE_BUCKET),
    endpoints: &[],
    asks: &[],
    start: Start::WhenConfigured,
};

/// Every role with a fixed name, in start-up order for the services: the auditor first, so
/// that it is there to log what the others publish (they stop in the reverse order).
pub const ROLES: [Role; 8] = [
    ADMIN,
    MAI,
    OPERATOR,
    AUDITOR.role,
    ASSESSOR.role,
    GATE.role,
    EXECUTOR.role,
    CHAT_BRIDGE.role,
];

/// The roles that are services, in start-up order.
pub const SERVICES: [ServiceRole; 5] = [AUDITOR, ASSESSOR, GATE, EXECUTOR, CHAT_BRIDGE];

/// The roles that are services, in start-up order.
pub fn services() -> impl Iterator<Item = &'static ServiceRole> {
    SERVICES.iter()
}

/// The role with this user name (extra client users are not in the table: see [`client`]).
pub fn by_user(user: &str) -> Option<&'static Role> {
    ROLES.iter().find(|r| r.user == user)
}

/// The service whose `airlock serve` word is `command`.
pub fn by_command(command: &str) -> Option<&'static ServiceRole> {
    services().find(|s| s.command == command)
}

/// Whether an envelope naming `producer` may carry an event of `kind`. The NATS permissions
/// already bound who can publish on each subject; this keeps a permitted publisher from
/// claiming to be another role that may publish the same kind.
pub fn may_produce(producer: Producer, kind: EventKind) -> bool {
    ROLES
        .iter()
        .any(|r| r.producer == Some(producer) && r.publishes.contains(&kind))
}

/// Whether `name` can be a NATS user of a stack: a subject token, short, not a fixed role.
pub fn valid_client_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
}

/// Whether `name` can name a person (an operator, an approver in `[people]`): lowercase letters,
/// digits, `-`, `_` and `.`, starting with a letter. It is shown in chat and logs, and names the
/// person's key files (`keys/operators/NAME.key`).
pub fn valid_person_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in ROLES.iter().enumerate() {
            for b in &ROLES[i + 1..] {
                assert_ne!(a.user, b.user);
                if let (Some(x), Some(y)) = (a.service(), b.service()) {
                    assert_ne!(x.name, y.name);
                    assert_ne!(x.command, y.command);
                    assert_ne!(x.config_section, y.config_section);
                    assert_ne!(x.consumes.durable, y.consumes.durable);
                }
            }
        }
    }

    #[test]
    fn the_service_roles_are_the_service_rows_in_start_up_order() {
        let service_users: Vec<&str> = ROLES
            .iter()
            .filter(|r| r.kind == RoleKind::Service)
            .map(|r| r.user)
            .collect();
        let rows: Vec<&str> = services().map(|s| s.role.user).collect();
        assert_eq!(service_users, rows);
        for service in services() {
            assert_eq!(by_user(service.role.user).and_then(Role::service), Some(service));
        }
        assert_eq!(MAI.service(), None);
    }

    #[test]
    fn each_kind_has_its_producers() {
        assert!(may_produce(Producer::Mai, EventKind::Submitted));
        assert!(!may_produce(Producer::Mai, EventKind::Terminal));
        assert!(may_produce(Producer::OverrideGate, EventKind::Decided));
        assert!(!may_produce(Producer::Executor, EventKind::Decided));
        assert!(!may_produce(Producer::Operator, EventKind::Decided));
        assert!(may_produce(Producer::Operator, EventKind::OverrideAnswered));
        assert!(may_produce(Producer::ChatBridge, EventKind::OverrideAnswered));
        assert!(!may_produce(Producer::ChatBridge, EventKind::Decided));
        assert!(!may_produce(Producer::ChatBridge, EventKind::Refused));
        for kind in EventKind::ALL {
            assert!(
                Producer::ALL.iter().any(|p| may_produce(*p, kind)),
                "nobody produces {kind}"
            );
        }
    }

    #[test]
    fn client_names_are_subject_tokens() {
        assert!(valid_client_name("mai"));
        assert!(valid_client_name("mai-batch2"));
        assert!(!valid_client_name("Mai"));
        assert!(!valid_client_name("a.b"));
        assert!(!valid_client_name("*"));
        assert!(!valid_client_name(""));
    }
}
