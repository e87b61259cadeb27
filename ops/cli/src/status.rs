//! `airlock status`: whether each service of the running stack answers, with its counters.

use crate::home::Home;
use airlock_protocol::roles;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Clone, Debug, clap::Args)]
pub struct StatusArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Keep asking until every service answers or this many seconds pass.
    #[arg(long, default_value_t = 0)]
    pub wait: u64,
}

pub async fn run(home: &Home, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.wait);
    loop {
        // Only the services this stack runs (the chat bridge when [bridge.*] is configured).
        let started = crate::serve::started(&home.config()?);
        let report = match crate::stack::connect(home, roles::OPERATOR.user).await {
            Ok(client) => probe(&client, &started).await,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(error = %e, "not reachable yet");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let all_up = report.values().all(|v| !v.is_null());
        if all_up || tokio::time::Instant::now() >= deadline {
            if args.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                for (name, stats) in &report {
                    if stats.is_null() {
                        println!("{name:<22} not answering");
                    } else {
                        println!("{name:<22} up   {}", stats);
                    }
                }
            }
            return Ok(if all_up { ExitCode::SUCCESS } else { ExitCode::FAILURE });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Each service's counters (from `$SRV.STATS`), or null when it does not answer.
async fn probe(client: &async_nats::Client, started: &[&str]) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut report = std::collections::BTreeMap::new();
    for (_, service) in roles::services().filter(|(_, s)| started.contains(&s.command)) {
        let name = service.name;
        let request = client.request(service.status_subject(), "".into());
        let value = match tokio::time::timeout(Duration::from_secs(2), request).await {
            Ok(Ok(reply)) => serde_json::from_slice(&reply.payload).unwrap_or(serde_json::Value::Null),
            _ => serde_json::Value::Null,
        };
        report.insert(name.to_owned(), value);
    }
    report
}
