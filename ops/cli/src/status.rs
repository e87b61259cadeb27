//! `airlock status`: every instance of every service that answers (on whatever host it runs),
//! the NATS cluster's health, each stream's and bucket's replicas and how far behind each
//! follower is, and how much each service's consumer has still to take.
//!
//! Instances answer the NATS service API (`$SRV.STATS.<name>`), one reply each; streams come
//! from JetStream's stream list, whose cluster section names the leader and every replica. Each
//! instance's INFO names where it serves its Prometheus metrics.

use crate::home::Home;
use airlock_protocol::roles;
use airlock_protocol::subjects::EVENTS_STREAM;
use async_nats::jetstream;
use futures::StreamExt as _;
use serde::Serialize;
use std::collections::BTreeMap;
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

/// One running instance of a service.
#[derive(Clone, Debug, Serialize)]
pub struct Instance {
    /// The service API's id of this instance (unique per process).
    pub id: String,
    pub version: String,
    /// When it started (RFC 3339).
    pub started: String,
    /// Its own counters.
    pub counters: serde_json::Value,
    /// What keeps it from doing its work now (`engine`: the container engine is unreachable,
    /// `audit_log`: runs wait for the audit log, ...), by what; empty when healthy.
    pub problems: BTreeMap<String, String>,
    /// What it is: for an executor, `runtimes`, the container runtimes it checked with its
    /// engine and offers.
    pub facts: BTreeMap<String, serde_json::Value>,
    /// Where it serves its metrics (from its service API INFO metadata), when it does.
    pub metrics: Option<String>,
}

/// A stream or bucket and where its replicas are.
#[derive(Clone, Debug, Serialize)]
pub struct StreamReport {
    pub name: String,
    pub replicas: usize,
    pub messages: u64,
    pub leader: Option<String>,
    pub peers: Vec<Peer>,
    /// `healthy`, `degraded` or `unavailable` (see `judge`).
    pub health: &'static str,
    /// Whether the stream lives in a JetStream cluster (a single server names no leader).
    #[serde(skip)]
    clustered: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Peer {
    pub name: String,
    pub current: bool,
    pub offline: bool,
    /// Operations behind the leader.
    pub lag: u64,
    /// Milliseconds since the leader last heard from it.
    pub active_ms: u128,
}

impl StreamReport {
    /// `healthy` with a leader and every replica current, `degraded` with a leader but a
    /// replica behind or away, `unavailable` without a leader (no quorum: writes stop).
    fn judge(&self) -> &'static str {
        if !self.clustered {
            // A single server that lists the stream serves it.
            "healthy"
        } else if self.leader.is_none() {
            "unavailable"
        } else if self.peers.iter().all(|p| p.current && !p.offline) && self.peers.len() + 1 >= self.replicas {
            "healthy"
        } else {
            "degraded"
        }
    }
}

impl std::fmt::Display for StreamReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<24} R{} {:<11} {:>8} msgs  leader {}",
            self.name,
            self.replicas,
            self.health,
            self.messages,
            self.leader.as_deref().unwrap_or("-")
        )?;
        for peer in &self.peers {
            let state = if peer.offline {
                "offline".to_owned()
            } else if peer.current {
                format!("current, lag {}", peer.lag)
            } else {
                format!("behind, lag {}", peer.lag)
            };
            write!(f, ", {} {state}", peer.name)?;
        }
        Ok(())
    }
}

/// A service consumer's backlog.
#[derive(Clone, Debug, Serialize)]
pub struct ConsumerReport {
    pub durable: String,
    /// Messages not yet delivered.
    pub pending: u64,
    /// Delivered and not yet acknowledged.
    pub ack_pending: usize,
    pub redelivered: usize,
}

#[derive(Debug, Serialize)]
struct Report {
    nats: serde_json::Value,
    services: BTreeMap<String, Vec<Instance>>,
    consumers: BTreeMap<String, Option<ConsumerReport>>,
    streams: Vec<StreamReport>,
    /// Why no stream could be listed (the server this connection reached has no quorum, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    streams_error: Option<String>,
}

impl Report {
    fn all_up(&self) -> bool {
        self.services.values().all(|instances| !instances.is_empty())
    }

    /// Every instance's problems, as `service (instance): what: detail`.
    fn problems(&self) -> Vec<String> {
        self.services
            .iter()
            .flat_map(|(name, instances)| {
                instances.iter().flat_map(move |instance| {
                    instance
                        .problems
                        .iter()
                        .map(move |(what, detail)| format!("{name} ({}): {what}: {detail}", instance.id))
                })
            })
            .collect()
    }
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
        let healthy = report.all_up() && report.problems().is_empty();
        if healthy || tokio::time::Instant::now() >= deadline {
            if args.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print(&report);
            }
            return Ok(if healthy { ExitCode::SUCCESS } else { ExitCode::FAILURE });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn print(report: &Report) {
    let nats = &report.nats;
    println!(
        "nats: {} via {} (server {}{})",
        nats["cluster"]
            .as_str()
            .map(|c| format!("cluster {c}"))
            .unwrap_or("single server".into()),
        nats["server"].as_str().unwrap_or("-"),
        nats["version"].as_str().unwrap_or("-"),
        if nats["tls"].as_bool() == Some(true) {
            ", TLS"
        } else {
            ""
        },
    );
    if let Some(nodes) = nats["nodes"].as_array().filter(|n| !n.is_empty()) {
        let names: Vec<&str> = nodes.iter().filter_map(|n| n.as_str()).collect();
        println!("  nodes seen: {}", names.join(", "));
    }
    println!("services:");
    for (name, instances) in &report.services {
        let durable = roles::services().find(|s| s.name == name).map(|s| s.consumes.durable);
        let backlog = durable
            .and_then(|d| report.consumers.get(d).cloned().flatten())
            .map(|c| {
                format!(
                    "  (consumer {}: {} pending, {} unacknowledged)",
                    c.durable, c.pending, c.ack_pending
                )
            })
            .unwrap_or_default();
        if instances.is_empty() {
            println!("  {name:<22} not answering{backlog}");
            continue;
        }
        println!("  {name:<22} {} instance(s){backlog}", instances.len());
        for instance in instances {
            println!(
                "    {:<24} since {}  {}",
                instance.id, instance.started, instance.counters
            );
            if let Some(url) = &instance.metrics {
                println!("    {:<24} metrics {url}", "");
            }
            if let Some(runtimes) = instance.facts.get("runtimes").and_then(|r| r.as_array()) {
                let names: Vec<&str> = runtimes.iter().filter_map(|r| r.as_str()).collect();
                let read_only = match instance.facts.get("runsc_read_only").and_then(|r| r.as_str()) {
                    Some(name) => format!(" (read-only internet under runsc through the engine's {name})"),
                    None => String::new(),
                };
                println!("    {:<24} runtimes {}{read_only}", "", names.join(", "));
            }
            if let Some(observation) = instance.facts.get("observation").and_then(|o| o.as_str()) {
                println!(
                    "    {:<24} kernel observation {}",
                    "",
                    airlock_protocol::text::visible_line(observation)
                );
            }
            for (what, detail) in &instance.problems {
                println!("    {:<24} PROBLEM {what}: {detail}", "");
            }
        }
    }
    println!("streams and buckets:");
    if let Some(error) = &report.streams_error {
        println!(
            "  cannot list them through {}: {error}",
            nats["server"].as_str().unwrap_or("-")
        );
    }
    for stream in &report.streams {
        println!("  {stream}");
    }
    let problems = report.problems();
    if !problems.is_empty() {
        println!("not healthy:");
        for problem in problems {
            println!("  {problem}");
        }
    }
}

async fn probe(client: &async_nats::Client, started: &[&str]) -> Report {
    let js = jetstream::new(client.clone());
    let mut services = BTreeMap::new();
    let mut consumers = BTreeMap::new();
    for service in roles::services().filter(|s| started.contains(&s.command)) {
        services.insert(service.name.to_owned(), instances(client, service.name).await);
        let durable = service.consumes.durable;
        consumers.insert(durable.to_owned(), consumer(&js, durable).await);
    }
    let (streams, streams_error) = match streams(&js).await {
        Ok(s) => (s, None),
        Err(e) => (Vec::new(), Some(format!("{e:#}"))),
    };
    let info = client.server_info();
    let mut nodes: Vec<String> = streams
        .iter()
        .flat_map(|s| s.leader.iter().cloned().chain(s.peers.iter().map(|p| p.name.clone())))
        .collect();
    nodes.sort();
    nodes.dedup();
    let nats = serde_json::json!({
        "server": info.server_name,
        "version": info.version,
        "cluster": info.cluster,
        "tls": info.tls_required,
        "nodes": nodes,
    });
    Report {
        nats,
        services,
        consumers,
        streams,
        streams_error,
    }
}

/// Every instance of service `name` that answers `$SRV.STATS` within a short window.
async fn instances(client: &async_nats::Client, name: &str) -> Vec<Instance> {
    let inbox = client.new_inbox();
    let Ok(mut replies) = client.subscribe(inbox.clone()).await else {
        return Vec::new();
    };
    if client
        .publish_with_reply(format!("$SRV.STATS.{name}"), inbox, "".into())
        .await
        .is_err()
    {
        return Vec::new();
    }
    let mut found = Vec::new();
    // Replies come within milliseconds on a healthy cluster; the window closes early once they
    // stop coming.
    let mut window = Duration::from_millis(1500);
    while let Ok(Some(message)) = tokio::time::timeout(window, replies.next()).await {
        window = Duration::from_millis(300);
        let Ok(stats) = serde_json::from_slice::<serde_json::Value>(&message.payload) else {
            continue;
        };
        let data = stats["endpoints"]
            .as_array()
            .and_then(|e| e.iter().find_map(|e| e.get("data").filter(|d| !d.is_null())))
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        // `{"counters", "problems"}`; an instance of an earlier release answers its counters
        // alone.
        let (counters, problems, facts) = match data.get("counters") {
            Some(counters) => (
                counters.clone(),
                serde_json::from_value(data["problems"].clone()).unwrap_or_default(),
                serde_json::from_value(data["facts"].clone()).unwrap_or_default(),
            ),
            None => (data, BTreeMap::new(), BTreeMap::new()),
        };
        let id = stats["id"].as_str().unwrap_or("-").to_owned();
        let info = ask(client, format!("$SRV.INFO.{name}.{id}")).await;
        let metrics = info["metadata"][airlock_bus::METRICS_METADATA]
            .as_str()
            .map(str::to_owned);
        found.push(Instance {
            metrics,
            problems,
            facts,
            id,
            version: stats["version"].as_str().unwrap_or("-").to_owned(),
            started: stats["started"].as_str().unwrap_or("-").to_owned(),
            counters,
        });
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    found
}

/// A service consumer's backlog, when this user may read it.
async fn consumer(js: &jetstream::Context, durable: &str) -> Option<ConsumerReport> {
    let subject = format!("CONSUMER.INFO.{EVENTS_STREAM}.{durable}");
    // An empty JSON object, as async-nats's own consumer_info sends.
    let empty = serde_json::json!({});
    let request = js.request::<_, _, jetstream::response::Response<jetstream::consumer::Info>>(subject, &empty);
    match tokio::time::timeout(Duration::from_secs(2), request).await {
        Ok(Ok(jetstream::response::Response::Ok(info))) => Some(ConsumerReport {
            durable: durable.to_owned(),
            pending: info.num_pending,
            ack_pending: info.num_ack_pending,
            redelivered: info.num_redelivered,
        }),
        _ => None,
    }
}

/// Every stream and bucket with its replicas (`airlock setup` prints these too).
pub async fn streams(js: &jetstream::Context) -> anyhow::Result<Vec<StreamReport>> {
    let mut list = js.streams();
    let mut found = Vec::new();
    while let Some(info) = list.next().await {
        let info = info?;
        let cluster = info.cluster.as_ref();
        let mut report = StreamReport {
            name: info.config.name.clone(),
            replicas: info.config.num_replicas,
            messages: info.state.messages,
            leader: cluster.and_then(|c| c.leader.clone()),
            peers: cluster
                .map(|c| {
                    c.replicas
                        .iter()
                        .map(|p| Peer {
                            name: p.name.clone(),
                            current: p.current,
                            offline: p.offline,
                            lag: p.lag.unwrap_or(0),
                            active_ms: p.active.as_millis(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            health: "",
            clustered: cluster.is_some_and(|c| c.name.is_some()),
        };
        report.health = report.judge();
        found.push(report);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// A JSON reply to a request, or null when none comes in time.
async fn ask(client: &async_nats::Client, subject: String) -> serde_json::Value {
    match tokio::time::timeout(Duration::from_secs(2), client.request(subject, "".into())).await {
        Ok(Ok(reply)) => serde_json::from_slice(&reply.payload).unwrap_or(serde_json::Value::Null),
        _ => serde_json::Value::Null,
    }
}
