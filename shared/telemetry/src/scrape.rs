//! The Prometheus endpoint of one service: `GET /metrics` in the text format, on the address
//! `[telemetry]` gives it (by default a free loopback port).
//!
//! Where it ended up listening is announced three ways: the NATS service API's INFO metadata
//! (`metrics`, shown by `airlock status`), the log, and a Prometheus file-discovery target file
//! (`<dir>/<service>.json`) that a `file_sd_configs` entry can watch, so that a scraper follows
//! services across restarts and free ports.
//!
//! The endpoint is optional: an address that cannot be bound is logged and the service runs on
//! without it.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use prometheus::Encoder as _;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a scraper may take to send its request line and headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("binding the metrics endpoint to {listen}")]
    Bind {
        listen: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the metrics endpoint needs an async runtime in the process that starts telemetry")]
    NoRuntime,
    #[error("writing the Prometheus target file {path}")]
    TargetFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// A metrics endpoint being served; its target file is removed when dropped.
#[derive(Debug)]
pub struct Endpoint {
    pub address: SocketAddr,
    target_file: Option<PathBuf>,
}

impl Endpoint {
    /// The URL a scraper reads.
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.address)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(path) = &self.target_file {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Binds `listen` now (so that a bad address is reported at start) and serves `registry` on
/// the current runtime.
pub fn serve(listen: &str, registry: prometheus::Registry) -> Result<Endpoint, ScrapeError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| ScrapeError::NoRuntime)?;
    let bind_error = |source| ScrapeError::Bind {
        listen: listen.to_owned(),
        source,
    };
    let listener = TcpListener::bind(listen).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let address = listener.local_addr().map_err(bind_error)?;
    let listener = {
        let _guard = runtime.enter();
        tokio::net::TcpListener::from_std(listener).map_err(bind_error)?
    };
    runtime.spawn(accept(listener, registry));
    Ok(Endpoint {
        address,
        target_file: None,
    })
}

async fn accept(listener: tokio::net::TcpListener, registry: prometheus::Registry) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: pause rather than spin.
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let registry = registry.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let registry = registry.clone();
                async move { Ok::<_, std::convert::Infallible>(respond(&request, &registry)) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "metrics endpoint: connection ended with an error");
            }
        });
    }
}

fn respond(request: &Request<Incoming>, registry: &prometheus::Registry) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &str, body: Vec<u8>| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
            response.headers_mut().insert(hyper::header::CONTENT_TYPE, value);
        }
        response
    };
    if request.method() != Method::GET || request.uri().path() != "/metrics" {
        return reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            b"only GET /metrics is served here\n".to_vec(),
        );
    }
    let encoder = prometheus::TextEncoder::new();
    let mut body = Vec::new();
    match encoder.encode(&registry.gather(), &mut body) {
        Ok(()) => reply(StatusCode::OK, encoder.format_type(), body),
        Err(e) => {
            tracing::warn!(error = %e, "metrics endpoint: encoding failed");
            reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                format!("encoding failed: {e}\n").into_bytes(),
            )
        }
    }
}

/// The address a scraper should use: an unspecified bind address (`0.0.0.0`) is reached on
/// loopback from this machine.
fn reachable(address: SocketAddr) -> SocketAddr {
    if address.ip().is_unspecified() {
        let loopback = match address {
            SocketAddr::V4(_) => std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            SocketAddr::V6(_) => std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        };
        SocketAddr::new(loopback, address.port())
    } else {
        address
    }
}

impl Endpoint {
    /// Writes `<dir>/<service>.json` in Prometheus's file-discovery format, atomically (a
    /// scraper watching the directory never reads half a file).
    pub fn write_target_file(&mut self, dir: &Path, service: &str) -> Result<(), ScrapeError> {
        let path = dir.join(format!("{service}.json"));
        let error = |source| ScrapeError::TargetFile {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(error)?;
        let body = serde_json::json!([{
            "targets": [reachable(self.address).to_string()],
            "labels": { "service": service },
        }]);
        let temporary = dir.join(format!(".{service}.json.tmp"));
        std::fs::write(&temporary, format!("{body}\n")).map_err(error)?;
        std::fs::rename(&temporary, &path).map_err(error)?;
        self.target_file = Some(path);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::metrics::MeterProvider as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    async fn get(address: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        response
    }

    #[tokio::test]
    async fn serves_what_was_recorded_and_announces_itself() {
        let registry = prometheus::Registry::new();
        let exporter = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
            .expect("exporter");
        let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
            .with_reader(exporter)
            .build();
        let counter = provider.meter("test").u64_counter("airlock.things").build();
        counter.add(3, &[opentelemetry::KeyValue::new("kind", "x")]);

        let dir = tempfile::tempdir().expect("dir");
        let mut endpoint = serve("127.0.0.1:0", registry).expect("serve");
        assert_ne!(endpoint.address.port(), 0);
        endpoint
            .write_target_file(dir.path(), "airlock-test")
            .expect("target file");

        let metrics = get(endpoint.address, "/metrics").await;
        assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
        assert!(metrics.contains("airlock_things_total{kind=\"x\""), "{metrics}");
        let missing = get(endpoint.address, "/other").await;
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

        let path = dir.path().join("airlock-test.json");
        let targets: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("target file written")).expect("json");
        assert_eq!(targets[0]["targets"][0], endpoint.address.to_string());
        assert_eq!(targets[0]["labels"]["service"], "airlock-test");
        drop(endpoint);
        assert!(!path.exists(), "the target file outlived its endpoint");
    }

    #[tokio::test]
    async fn an_address_in_use_is_an_error_not_a_panic() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = taken.local_addr().expect("address").to_string();
        assert!(matches!(
            serve(&address, prometheus::Registry::new()),
            Err(ScrapeError::Bind { .. })
        ));
    }

    #[test]
    fn wildcard_addresses_are_announced_on_loopback() {
        assert_eq!(
            reachable("0.0.0.0:9464".parse().expect("addr")).to_string(),
            "127.0.0.1:9464"
        );
        assert_eq!(reachable("10.0.0.2:1".parse().expect("addr")).to_string(), "10.0.0.2:1");
    }
}
