//! Observability against the real thing: a stack (`airlock up`) exporting to a real OTLP
//! receiver that decodes what it is sent with the `opentelemetry-proto` package, over gRPC and
//! over HTTP; a collector that hangs and one that is not there; a peer that resets every
//! connection. One request is one trace from the CLI to its terminal event, idle services
//! export nothing, a collector's troubles cost a request nothing, and SIGPIPE kills no service.

#[path = "../telemetry/prometheus.rs"]
mod prometheus;
#[path = "../telemetry/receiver.rs"]
mod receiver;

use airlock_tests::{Stack, http_get, trace_ids_of};
use prometheus::Prometheus;
use receiver::{Receiver, Span, env_refs, otel_env, run_with_env};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The spans a plain approved request must have in its trace: (service, span name).
const REQUEST_SPANS: [(&str, &str); 13] = [
    ("airlock-cli", "airlock run"),
    ("airlock-cli", "publish submitted"),
    ("airlock-assessor", "handle submitted"),
    ("airlock-assessor", "assess"),
    ("airlock-assessor", "publish assessed"),
    ("airlock-override-gate", "handle assessed"),
    ("airlock-override-gate", "decide"),
    ("airlock-override-gate", "publish decided"),
    ("airlock-executor", "handle decided"),
    ("airlock-executor", "container start"),
    ("airlock-executor", "run"),
    ("airlock-executor", "publish terminal"),
    ("airlock-auditor", "audit append"),
];

/// Each step of the request is the child of the step before it.
const CHAIN: [(&str, &str); 12] = [
    ("publish submitted", "airlock run"),
    ("handle submitted", "publish submitted"),
    ("assess", "handle submitted"),
    ("publish assessed", "handle submitted"),
    ("handle assessed", "publish assessed"),
    ("decide", "handle assessed"),
    ("publish decided", "handle assessed"),
    ("handle decided", "publish decided"),
    ("container start", "handle decided"),
    ("run", "handle decided"),
    ("publish terminal", "handle decided"),
    ("audit append", "publish terminal"),
];

fn in_trace(spans: &[Span], trace: &str) -> Vec<Span> {
    spans.iter().filter(|s| s.trace_id == trace).cloned().collect()
}

fn has_all(spans: &[Span]) -> bool {
    REQUEST_SPANS
        .iter()
        .all(|(service, name)| spans.iter().any(|s| s.service == *service && s.name == *name))
}

/// The first link of `CHAIN` missing from `spans`, if any.
fn missing_link(spans: &[Span]) -> Option<(&'static str, &'static str)> {
    CHAIN.iter().copied().find(|(child, parent)| {
        let parents: BTreeSet<&str> = spans
            .iter()
            .filter(|s| s.name == *parent)
            .map(|s| s.span_id.as_str())
            .collect();
        !spans
            .iter()
            .any(|s| s.name == *child && parents.contains(s.parent_span_id.as_str()))
    })
}

/// The trace id every event of a request carried (all the same, or the test fails).
fn trace_of(stack: &Stack, request_id: &str) -> String {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let traces = runtime.block_on(trace_ids_of(stack, request_id));
    assert!(traces.len() >= 5, "too few events for {request_id}: {traces:?}");
    let ids: BTreeSet<&str> = traces.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(ids.len(), 1, "the request's events carry several traces: {traces:?}");
    let trace = traces[0].1.clone();
    assert!(
        trace.len() == 32 && trace != "0".repeat(32),
        "no trace id in the events' headers: {traces:?}"
    );
    trace
}

/// One request, exported over `protocol` (None: the default, http/protobuf), is one trace
/// spanning the CLI and the four services, with a span for each step; nothing is exported while
/// idle; and the services' metrics reach the collector over the same transport.
fn one_trace_per_request(mode: &str, protocol: Option<&str>) {
    let receiver = Receiver::start(mode);
    let env = otel_env(&receiver.endpoint(), protocol);
    let stack = Stack::start_with_env("", &env_refs(&env));

    let (json, status, _) = run_with_env(&stack, &env, "hello.py", "print('hello')\n");
    assert!(status.success(), "{json}");
    assert_eq!(json["stdout"], "hello\n", "{json}");
    let request_id = json["request_id"].as_str().expect("request id").to_owned();
    let trace = trace_of(&stack, &request_id);

    // Every step, each under the one before it: the auditor appends each of the request's events
    // as it comes, so an `audit append` (of an earlier event) can be there before the one under
    // the terminal's publish.
    receiver.wait_until("every step of the request's trace", Duration::from_secs(60), |r| {
        let spans = in_trace(&r.spans(), &trace);
        has_all(&spans) && missing_link(&spans).is_none()
    });
    let spans = in_trace(&receiver.spans(), &trace);
    let services: BTreeSet<&str> = spans.iter().map(|s| s.service.as_str()).collect();
    assert_eq!(
        services,
        BTreeSet::from([
            "airlock-assessor",
            "airlock-auditor",
            "airlock-cli",
            "airlock-executor",
            "airlock-override-gate"
        ]),
        "{spans:#?}"
    );
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), 1, "one trace has one root: {roots:#?}");
    assert_eq!(roots[0].name, "airlock run");
    let ids: BTreeSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    for span in &spans {
        assert!(
            span.parent_span_id.is_empty() || ids.contains(span.parent_span_id.as_str()),
            "{span:?}'s parent is not in the trace"
        );
    }
    if let Some((child, parent)) = missing_link(&spans) {
        panic!("no {child:?} span under {parent:?}: {spans:#?}");
    }

    // Idle: the exporter's own traffic is not exported, nor anything else. The request's last
    // spans (its remaining events' appends) may still be on their way on a busy machine: wait
    // until none came for 1.5 s (which a periodic export every few seconds would not stop),
    // then watch a longer quiet window.
    let mut count = receiver.spans().len();
    let settling = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(1500));
        let now = receiver.spans().len();
        if now == count || settling.elapsed() > Duration::from_secs(30) {
            break;
        }
        count = now;
    }
    let before = receiver.spans();
    std::thread::sleep(Duration::from_secs(5));
    let after = receiver.spans();
    assert_eq!(
        before.len(),
        after.len(),
        "spans exported while idle: {:#?}",
        &after[before.len().min(after.len())..]
    );

    receiver.wait_until("each service's metrics", Duration::from_secs(30), |r| {
        let metrics = r.metrics();
        [
            ("airlock-assessor", "airlock.requests.assessed"),
            ("airlock-override-gate", "airlock.requests.decided"),
            ("airlock-executor", "airlock.requests.ended"),
            ("airlock-executor", "airlock.pool.containers"),
            ("airlock-auditor", "airlock.request.stage.duration"),
            ("airlock-auditor", "airlock.audit.lag"),
        ]
        .iter()
        .all(|(service, name)| metrics.iter().any(|(s, n)| s == service && n == name))
    });
    assert!(
        !receiver.metrics().iter().any(|(service, _)| service == "airlock-cli"),
        "a short-lived CLI exported metrics"
    );
}

#[test]
fn a_request_is_one_trace_over_grpc() {
    one_trace_per_request("grpc", Some("grpc"));
}

#[test]
fn a_request_is_one_trace_over_http_the_default_protocol() {
    one_trace_per_request("http", None);
}

/// Every service's pid, from stack.json.
fn service_pids(stack: &Stack) -> Vec<(String, u32)> {
    ["assessor", "override-gate", "executor", "auditor"]
        .iter()
        .map(|name| {
            let pid = stack.service_pid(name).unwrap_or_else(|| panic!("no pid for {name}"));
            ((*name).to_owned(), pid)
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// No service died (and was restarted) since `pids` were read.
fn assert_no_service_died(stack: &Stack, pids: &[(String, u32)]) {
    assert_eq!(
        service_pids(stack),
        pids,
        "a service was restarted:\n{}",
        stack.diagnostics()
    );
    for (name, pid) in pids {
        assert!(alive(*pid), "{name} (pid {pid}) is gone:\n{}", stack.diagnostics());
    }
    let up_log = std::fs::read_to_string(stack.path().join("up.log")).unwrap_or_default();
    assert!(!up_log.contains("exited"), "airlock up saw a service exit:\n{up_log}");
    let status = stack.output(&["status"]);
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stdout));
}

/// With the export timeout at 30 s, a request that waited for the collector would take at
/// least that long; one that does not takes well under a second here. The bound sits far from
/// both, so it tells blocking from not blocking, not fast from slow.
const BLOCKED_WOULD_TAKE: Duration = Duration::from_secs(30);
const NOT_BLOCKED_BOUND: Duration = Duration::from_secs(10);

#[test]
fn a_hanging_or_missing_collector_costs_a_request_nothing() {
    let hanging = Receiver::start("hang");
    let timeout = BLOCKED_WOULD_TAKE.as_millis().to_string();
    // The services send spans over gRPC and metrics over HTTP, both to a collector that
    // accepts connections and never answers.
    let mut services_env = otel_env(&hanging.endpoint(), None);
    services_env.extend([
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL".to_owned(), "grpc".to_owned()),
        (
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL".to_owned(),
            "http/protobuf".to_owned(),
        ),
        ("OTEL_EXPORTER_OTLP_TIMEOUT".to_owned(), timeout.clone()),
    ]);
    let stack = Stack::start_with_env("", &env_refs(&services_env));
    let pids = service_pids(&stack);
    let missing = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", listener.local_addr().expect("address"))
    };

    for (i, (endpoint, protocol)) in [
        (hanging.endpoint(), "grpc"),
        (hanging.endpoint(), "http/protobuf"),
        (missing.clone(), "grpc"),
        (missing.clone(), "http/protobuf"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut env = otel_env(&endpoint, Some(protocol));
        env.push(("OTEL_EXPORTER_OTLP_TIMEOUT".to_owned(), timeout.clone()));
        let (json, status, took) = run_with_env(&stack, &env, &format!("hello{i}.py"), "print('hello')\n");
        assert!(
            status.success(),
            "CLI exporting to {endpoint} over {protocol}: {status}: {json}"
        );
        assert_eq!(json["stdout"], "hello\n", "{json}");
        assert!(
            took < NOT_BLOCKED_BOUND,
            "airlock run exporting to {endpoint} over {protocol} took {took:?}: it waited for the collector (export timeout {BLOCKED_WOULD_TAKE:?})"
        );
    }
    // The services did try the hanging collector (else this proved nothing).
    hanging.wait_until("the services' connections", Duration::from_secs(30), |r| {
        r.connections() >= 2
    });
    assert_no_service_died(&stack, &pids);

    // Their metrics are still served while the collector hangs.
    let status = stack.output(&["status", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status --json");
    let url = report["services"]["airlock-executor"][0]["metrics"]
        .as_str()
        .unwrap_or_else(|| panic!("no metrics URL in {report}"));
    let text = http_get(url);
    assert!(
        text.contains("airlock_requests_ended_total{outcome=\"finished\""),
        "{text}"
    );
}

/// The services of a stack, by the names their metrics and target files carry.
const SERVICES: [&str; 4] = [
    "airlock-assessor",
    "airlock-override-gate",
    "airlock-executor",
    "airlock-auditor",
];

/// A real Prometheus (Debian's) finds every service of a stack through the file-discovery
/// target files they write in `<home>/metrics`, scrapes each one, and has the requests' counts
/// and stage latencies.
#[test]
fn prometheus_scrapes_every_service_through_its_target_file() {
    let stack = Stack::start();
    let targets_dir = stack.path().join("metrics");
    for service in SERVICES {
        let file = targets_dir.join(format!("{service}.json"));
        assert!(file.exists(), "{service} wrote no target file {}", file.display());
    }
    let prometheus = Prometheus::start(&targets_dir.join("*.json"));

    let requests = 2;
    for i in 0..requests {
        let (json, status, _) = run_with_env(&stack, &[], &format!("scraped{i}.py"), "print('hello')\n");
        assert!(status.success(), "{json}");
        assert_eq!(json["stdout"], "hello\n", "{json}");
    }

    // Every service is a target, and up; scraped where `airlock status` says it serves metrics.
    let limit = Duration::from_secs(60);
    let targets = prometheus.wait_until("every service's target up", limit, |p| {
        let targets = p.targets();
        let up = SERVICES
            .iter()
            .all(|s| targets.iter().any(|t| t.service == *s && t.health == "up"));
        let seen: Vec<String> = targets.iter().map(ToString::to_string).collect();
        if up { Ok(targets) } else { Err(format!("{seen:?}")) }
    });
    let services: BTreeSet<&str> = targets.iter().map(|t| t.service.as_str()).collect();
    assert_eq!(services, BTreeSet::from(SERVICES), "{targets:#?}");
    let status = stack.output(&["status", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status --json");
    for target in &targets {
        assert_eq!(
            report["services"][&target.service][0]["metrics"], target.scrape_url,
            "{target:?} is not where `airlock status` says {} serves metrics: {report}",
            target.service
        );
    }

    // The requests, counted by the executor and timed by the auditor, as Prometheus stored them.
    let at_least = |promql: String, n: f64| {
        prometheus.wait_until(&format!("{promql} >= {n}"), limit, |p| match p.value(&promql) {
            Some(value) if value >= n => Ok(value),
            other => Err(format!("{other:?}")),
        })
    };
    let requests = f64::from(requests);
    at_least(
        r#"sum(airlock_requests_ended_total{service="airlock-executor",outcome="finished"})"#.to_owned(),
        requests,
    );
    let stage = |series: &str, labels: &str| {
        format!(
            r#"sum(airlock_request_stage_duration_seconds_{series}{{service="airlock-auditor",stage="total"{labels}}})"#
        )
    };
    let count = at_least(stage("count", ""), requests);
    let all = at_least(stage("bucket", r#",le="+Inf""#), requests);
    assert_eq!(all, count, "the +Inf bucket and the count disagree");
    // The buckets make a distribution: its median is a time, not NaN.
    let p50 = at_least(
        r#"histogram_quantile(0.5, sum by (le) (airlock_request_stage_duration_seconds_bucket{service="airlock-auditor",stage="total"}))"#.to_owned(),
        0.0,
    );
    assert!(p50 > 0.0 && p50 < 900.0, "median total time {p50} s");
}

#[test]
fn sigpipe_kills_no_service_and_no_exporting_command() {
    // A peer that resets every connection: each export writes to a dead socket.
    let reset = Receiver::start("reset");
    let mut env = otel_env(&reset.endpoint(), None);
    env[1].1 = "100".to_owned();
    let stack = Stack::start_with_env("", &env_refs(&env));
    let pids = service_pids(&stack);

    let start = Instant::now();
    let mut i = 0;
    while start.elapsed() < Duration::from_secs(8) {
        for protocol in ["http/protobuf", "grpc"] {
            let mut cli = otel_env(&reset.endpoint(), Some(protocol));
            cli[1].1 = "100".to_owned();
            let (json, status, _) = run_with_env(&stack, &cli, &format!("p{i}.py"), "print('hello')\n");
            i += 1;
            assert!(
                status.success(),
                "airlock run exporting over {protocol} to a resetting peer ended with {status}: {json}"
            );
        }
    }
    reset.wait_until("connections to reset", Duration::from_secs(30), |r| {
        r.connections() >= 4
    });
    assert_no_service_died(&stack, &pids);

    // The signal itself: services and the supervisor ignore it.
    let supervisor = {
        let info: serde_json::Value =
            serde_json::from_slice(&std::fs::read(stack.path().join("stack.json")).expect("stack.json"))
                .expect("stack.json parses");
        info["supervisor_pid"].as_u64().expect("supervisor pid") as u32
    };
    for (_, pid) in pids.iter().chain(std::iter::once(&("up".to_owned(), supervisor))) {
        // SAFETY: sends SIGPIPE to a process this test's stack started.
        unsafe {
            libc::kill(*pid as libc::pid_t, libc::SIGPIPE);
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(alive(supervisor), "airlock up died of SIGPIPE");
    assert_no_service_died(&stack, &pids);

    // A printing command still ends quietly when its reader goes away.
    let mut replay = stack
        .airlock()
        .args(["audit", "replay"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("airlock audit replay");
    drop(replay.stdout.take());
    let output = replay.wait_with_output().expect("replay");
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGPIPE),
        "airlock audit replay into a closed pipe: {} {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
}
