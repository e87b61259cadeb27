//! What a fetch through the read-only proxy costs against the same fetch made directly: a local
//! HTTPS origin (its own CA), and N one-shot fetches each way, each on a new connection as a
//! program's single `urlopen` would make (direct: TCP + TLS to the origin; proxied: TCP to the
//! proxy, CONNECT, TLS with the run's CA, and the proxy's own TLS to the origin).
//!
//! `cargo run --release -p airlock-egress --example forward_latency -- [N]`

#[path = "../tests/support/origin.rs"]
mod support;

use airlock_egress::forward::Listening;
use airlock_egress::{EgressConfig, ForwardProxy};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1000.0;
    println!(
        "{name:<24} n={} median {:.2} ms  p90 {:.2} ms  min {:.2} ms",
        samples.len(),
        at(0.5),
        at(0.9),
        at(0.0)
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let (origin, origin_ca) = support::origin().await;
    let dir = tempfile::tempdir()?;
    let roots = dir.path().join("origin-ca.pem");
    std::fs::write(&roots, &origin_ca)?;
    let config = EgressConfig {
        read_only_hosts: vec!["docs.test".into()],
        pinned: [("docs.test".to_owned(), format!("https://127.0.0.1:{}", origin.port()))].into(),
        upstream_roots: vec![roots],
        max_total_bytes: u64::MAX,
        ..Default::default()
    };
    let proxy = ForwardProxy::start(Listening::Tcp((Ipv4Addr::LOCALHOST, 0).into()), config, |_| {}).await?;
    let Listening::Tcp(proxy_addr) = proxy.listening().clone() else {
        anyhow::bail!("the proxy was asked to listen on TCP")
    };
    let direct = || {
        reqwest::Client::builder()
            .no_proxy()
            .resolve("docs.test", origin)
            .tls_certs_only([reqwest::Certificate::from_pem(origin_ca.as_bytes()).expect("origin CA")])
            .build()
            .expect("client")
    };
    let proxied = || {
        reqwest::Client::builder()
            .proxy(reqwest::Proxy::all(format!("http://{proxy_addr}")).expect("proxy"))
            .tls_certs_only([reqwest::Certificate::from_pem(proxy.ca_pem().as_bytes()).expect("run CA")])
            .build()
            .expect("client")
    };
    let direct_url = format!("https://docs.test:{}/page", origin.port());
    let mut times = (Vec::new(), Vec::new());
    for round in 0..n + 10 {
        // A client per fetch (a new connection), built before the clock starts.
        let client = direct();
        let start = Instant::now();
        let body = client.get(&direct_url).send().await?.text().await?;
        let direct_time = start.elapsed();
        assert_eq!(body, support::PAGE);
        let client = proxied();
        let start = Instant::now();
        let body = client.get("https://docs.test/page").send().await?.text().await?;
        let proxied_time = start.elapsed();
        assert_eq!(body, support::PAGE);
        // The first rounds warm caches (the leaf certificate is made on the first tunnel).
        if round >= 10 {
            times.0.push(direct_time);
            times.1.push(proxied_time);
        }
    }
    summary("direct (new TLS)", times.0);
    summary("through the proxy", times.1);
    proxy.stop().await;
    Ok(())
}
