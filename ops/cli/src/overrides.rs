//! `airlock override ...`: the command-line chat bridge. Lists requests waiting for a human and
//! answers them with an answer signed by the operator's approver key.

use crate::home::Home;
use airlock_bus::Publisher;
use airlock_override_gate::PendingOverride;
use airlock_protocol::overrides::ANSWER_DOMAIN;
use airlock_protocol::subjects::GATE_PENDING_ENDPOINT;
use airlock_protocol::{
    Envelope, Event, EventKind, OverrideAnswer, OverrideAnswered, Producer, RequestId, Signed, SigningKey, now_ms,
};
use anyhow::Context as _;
use futures::StreamExt as _;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Clone, Debug, clap::Subcommand)]
pub enum OverrideCommand {
    /// Requests waiting for a human.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Let a request run (with the override quota).
    Approve(Answer),
    /// Refuse a request.
    Deny(Answer),
}

#[derive(Clone, Debug, clap::Args)]
pub struct Answer {
    pub request_id: RequestId,
    /// Why; recorded in the decision and the audit log.
    #[arg(long)]
    pub reason: String,
    /// Who answers (default: $USER).
    #[arg(long)]
    pub who: Option<String>,
}

pub async fn run(home: &Home, command: OverrideCommand) -> anyhow::Result<ExitCode> {
    let client = crate::stack::connect(home, "operator").await?;
    match command {
        OverrideCommand::List { json } => {
            let pending = list(&client).await?;
            if json {
                println!("{}", serde_json::to_string(&pending)?);
            } else if pending.is_empty() {
                println!("no requests are waiting for a decision");
            } else {
                for p in pending {
                    let left = (p.asked.deadline_ms - now_ms()).max(0) / 1000;
                    println!(
                        "{}  {}  {}  ({}s left to answer)",
                        p.request_id,
                        p.asked.level,
                        p.asked.label.as_deref().unwrap_or("-"),
                        left
                    );
                    for line in p.asked.explanation.lines() {
                        println!("    {line}");
                    }
                    if p.asked.approvals_needed > 1 {
                        println!(
                            "    needs {} different approvers; approved so far by: {}",
                            p.asked.approvals_needed,
                            if p.approved_by.is_empty() {
                                "nobody".to_owned()
                            } else {
                                p.approved_by.join(", ")
                            }
                        );
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        OverrideCommand::Approve(answer) => answer_request(home, &client, answer, true).await,
        OverrideCommand::Deny(answer) => answer_request(home, &client, answer, false).await,
    }
}

pub async fn list(client: &async_nats::Client) -> anyhow::Result<Vec<PendingOverride>> {
    let reply = tokio::time::timeout(
        Duration::from_secs(10),
        client.request(GATE_PENDING_ENDPOINT, "".into()),
    )
    .await
    .context("the override-gate did not answer")?
    .context("asking the override-gate for pending requests")?;
    serde_json::from_slice(&reply.payload).with_context(|| {
        format!(
            "unreadable reply from the override-gate: {}",
            String::from_utf8_lossy(&reply.payload)
        )
    })
}

async fn answer_request(
    home: &Home,
    client: &async_nats::Client,
    answer: Answer,
    approve: bool,
) -> anyhow::Result<ExitCode> {
    let pending = list(client).await?;
    let Some(request) = pending.into_iter().find(|p| p.request_id == answer.request_id) else {
        eprintln!(
            "{} is not waiting for a decision (`airlock override list`)",
            answer.request_id
        );
        return Ok(ExitCode::from(crate::run::status::USAGE));
    };
    let key = SigningKey::load(&home.private_key(crate::stack::APPROVER_KEY.0)).context("the approver key")?;
    let who = answer
        .who
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "operator".into());
    let needed = request.asked.approvals_needed;
    let me = who.clone();
    let signed = Signed::sign(
        &OverrideAnswer {
            request_id: answer.request_id.clone(),
            code_digest: request.asked.code_digest,
            approve,
            reason: answer.reason,
            who,
            answered_at_ms: now_ms(),
            via: None,
            approve_again_for_ms: None,
            refused_at_edge: None,
        },
        ANSWER_DOMAIN,
        &key,
    );
    // Watch for the gate's response before sending the answer.
    let rid = &answer.request_id;
    let mut decided = client.subscribe(EventKind::Decided.subject(rid)).await?;
    let mut refused = client.subscribe(EventKind::Refused.subject(rid)).await?;
    let publisher = Publisher::new(
        async_nats::jetstream::new(client.clone()),
        Producer::Operator,
        tokio_util::sync::CancellationToken::new(),
    )
    .with_patience(Duration::from_secs(30));
    let envelope = Envelope::new(
        rid.clone(),
        Producer::Operator,
        Event::OverrideAnswered(OverrideAnswered { signed }),
    );
    publisher.publish(&envelope).await?;
    // Under the two-person rule a first approval decides nothing: it shows in the pending list.
    let counted = async {
        if !approve || needed < 2 {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if let Ok(pending) = list(client).await
                && pending
                    .iter()
                    .any(|p| &p.request_id == rid && p.approved_by.contains(&me))
            {
                return;
            }
        }
    };
    tokio::select! {
        () = counted => {
            println!("{rid}: approval counted; {needed} different approvers are needed, waiting for another");
            Ok(ExitCode::SUCCESS)
        }
        Some(_) = decided.next() => {
            println!("{rid}: {}", if approve { "approved" } else { "denied" });
            Ok(ExitCode::SUCCESS)
        }
        Some(message) = refused.next() => {
            let detail = match Envelope::decode(&message.payload) {
                Ok(Envelope { event: Event::Refused(r), .. }) => r.detail,
                _ => "refused".into(),
            };
            eprintln!("{rid}: the gate refused the answer: {detail}");
            Ok(ExitCode::from(crate::run::status::DENIED))
        }
        _ = tokio::time::sleep(Duration::from_secs(15)) => {
            eprintln!("{rid}: answer sent, but the gate has not confirmed it yet");
            Ok(ExitCode::from(crate::run::status::AIRLOCK_FAILED))
        }
    }
}
