//! `airlock status`: whether each service of the running stack answers, with its counters and
//! where it serves its metrics (from its NATS service API INFO metadata).

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
        let report = match crate::stack::connect(home, roles::OPERATOR.user).await {
            Ok(client) => probe(&client).await,
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
                for (name, status) in &report {
                    if status.is_null() {
                        println!("{name:<22} not answering");
                        continue;
                    }
                    println!("{name:<22} up   {}", status["counters"]);
                    if let Some(url) = status["metrics"].as_str() {
                        println!("{:<22}      metrics {url}", "");
                    }
                }
            }
            return Ok(if all_up { ExitCode::SUCCESS } else { ExitCode::FAILURE });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Each service's `{"counters": {...}, "metrics": URL or null}`, or null when it does not
/// answer.
async fn probe(client: &async_nats::Client) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut report = std::collections::BTreeMap::new();
    for (_, service) in roles::services() {
        let name = service.name;
        let counters = ask(client, service.status_subject()).await;
        let value = if counters.is_null() {
            serde_json::Value::Null
        } else {
            let info = ask(client, format!("$SRV.INFO.{name}")).await;
            let metrics = info["metadata"][airlock_bus::METRICS_METADATA].clone();
            serde_json::json!({ "counters": counters, "metrics": metrics })
        };
        report.insert(name.to_owned(), value);
    }
    report
}

/// A JSON reply to a request, or null when none comes in time.
async fn ask(client: &async_nats::Client, subject: String) -> serde_json::Value {
    match tokio::time::timeout(Duration::from_secs(2), client.request(subject, "".into())).await {
        Ok(Ok(reply)) => serde_json::from_slice(&reply.payload).unwrap_or(serde_json::Value::Null),
        _ => serde_json::Value::Null,
    }
}
