//! The forward proxy of a read-only run: the program's only way out (`HTTP_PROXY` and
//! `HTTPS_PROXY` point here; its container has no resolver and no route).
//!
//! Plain HTTP arrives in absolute form (`GET http://host/path`); HTTPS arrives as a CONNECT
//! tunnel, which the proxy terminates with a certificate for the host signed by the run's own CA
//! ([`ca::RunCa`]), so that every request inside it is seen like a plain one. Each request is
//! checked by [`rules`] (an allow-listed host named, not an IP; the standard port; GET or HEAD;
//! no body; bounded URL and headers), fetched upstream over verified TLS from a public address
//! only (the same client as installs use), counted against the run's byte cap, and reported
//! as one [`Egress`] record, allowed or not. A refusal is an HTTP error whose body and reason
//! phrase say why, so a program (and the person reading its output) sees the cause.

pub mod ca;
pub mod rules;

use crate::config::EgressConfig;
use crate::error::EgressError;
use crate::policy::Disallowed;
use crate::proxy::{self, Body, Metered, Session};
use airlock_protocol::{Egress, error_chain};
use bytes::Bytes;
use ca::RunCa;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use rules::Target;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Largest request head hyper reads at all; heads between `max_header_bytes` and this are
/// refused (and reported) by [`rules::request`], larger ones by hyper with a 431.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Longest wait for a program's TLS handshake inside a tunnel.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

/// The forward proxy of one read-only run; [`ForwardProxy::stop`] ends it.
pub struct ForwardProxy {
    at: Listening,
    state: Arc<Forward>,
    task: tokio::task::JoinHandle<()>,
}

/// Where a forward proxy takes connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listening {
    /// A TCP address: the run network's gateway, which only that network reaches (runc).
    Tcp(SocketAddr),
    /// A unix socket, bind-mounted into the run's container, which has no network interface at
    /// all; a relay inside it carries the program's TCP connections here (gVisor).
    Unix(PathBuf),
}

/// Connections from either kind of listener, served alike.
enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

/// One accepted connection, of either kind.
trait Connection: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> Connection for T {}

impl Listener {
    async fn accept(&self) -> std::io::Result<Box<dyn Connection>> {
        Ok(match self {
            Listener::Tcp(listener) => Box::new(listener.accept().await?.0),
            Listener::Unix(listener) => Box::new(listener.accept().await?.0),
        })
    }
}

/// Binds a unix socket at `path` (which must not exist), connectable by any user: the
/// container's relay runs as another user than the executor, and the directory holding the
/// socket is what decides who reaches it.
fn listen_unix(path: &Path) -> Result<tokio::net::UnixListener, EgressError> {
    use std::os::unix::fs::PermissionsExt as _;
    let error = |source| EgressError::ListenUnix {
        path: path.to_owned(),
        source,
    };
    let listener = tokio::net::UnixListener::bind(path).map_err(error)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).map_err(error)?;
    Ok(listener)
}

struct Forward {
    config: EgressConfig,
    client: reqwest::Client,
    session: Arc<Session>,
    ca: RunCa,
    cancel: CancellationToken,
    /// Connections and the tunnels opened on them: all end when the proxy stops.
    tasks: TaskTracker,
}

impl ForwardProxy {
    /// Listens on `at` with a fresh CA, and reports each request through `report`. A TCP
    /// address with port 0 is given a free port ([`ForwardProxy::listening`] says which).
    pub async fn start(
        at: Listening,
        config: EgressConfig,
        report: impl Fn(Egress) + Send + Sync + 'static,
    ) -> Result<ForwardProxy, EgressError> {
        let ca = RunCa::generate(&config.read_only_hosts)?;
        let (listener, at) = match at {
            Listening::Tcp(bind) => {
                let (listener, addr) = proxy::listen(bind).await?;
                (Listener::Tcp(listener), Listening::Tcp(addr))
            }
            Listening::Unix(path) => (Listener::Unix(listen_unix(&path)?), Listening::Unix(path)),
        };
        let state = Arc::new(Forward {
            client: proxy::upstream_client(&config)?,
            config,
            session: Session::new(Arc::new(report)),
            ca,
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        let task = tokio::spawn(serve(listener, state.clone()));
        Ok(ForwardProxy { at, state, task })
    }

    /// Where it takes connections (with the port chosen, for TCP).
    pub fn listening(&self) -> &Listening {
        &self.at
    }

    /// The run's CA certificate (PEM): what the run's container trusts, and nothing else does.
    pub fn ca_pem(&self) -> &str {
        self.state.ca.cert_pem()
    }

    /// Bytes fetched upstream so far.
    pub fn bytes(&self) -> u64 {
        self.state.session.total.load(Ordering::Relaxed)
    }

    /// Stops accepting, ends every connection and tunnel, and returns once each request has
    /// been reported.
    pub async fn stop(self) {
        self.state.cancel.cancel();
        let _ = self.task.await;
        self.state.tasks.close();
        self.state.tasks.wait().await;
    }
}

async fn serve(listener: Listener, state: Arc<Forward>) {
    loop {
        let accepted = tokio::select! {
            _ = state.cancel.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok(stream) = accepted else { continue };
        let conn_state = state.clone();
        state.tasks.spawn(async move {
            let service_state = conn_state.clone();
            let service = hyper::service::service_fn(move |req| outer(service_state.clone(), req));
            let conn = http1()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                _ = conn_state.cancel.cancelled() => {}
                result = conn => if let Err(error) = result { head_error(&conn_state, "", &error) }
            }
        });
    }
}

fn http1() -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.max_buf_size(MAX_HEAD_BYTES);
    builder
}

/// A connection hyper gave up on: a head too large to read is a refused request like any other.
fn head_error(state: &Forward, host: &str, error: &hyper::Error) {
    if error.is_parse_too_large() {
        report(
            state,
            Egress {
                method: String::new(),
                host: host.to_owned(),
                url: String::new(),
                allowed: false,
                status: Some(431),
                bytes: 0,
                reason: Some(format!("a request head larger than {MAX_HEAD_BYTES} bytes")),
            },
        );
    } else {
        tracing::debug!(%error, "read-only proxy connection");
    }
}

fn report(state: &Forward, event: Egress) {
    (state.session.report)(event);
}

/// A refusal the program can read: the reason in the body and in the status line (clients
/// such as Python's `http.client` show only the latter for a refused CONNECT).
fn refusal(status: u16, reason: &str) -> Response<Body> {
    let mut response = proxy::full(
        StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN),
        format!("airlock read-only internet: {reason}\n"),
    );
    let phrase: String = format!("Refused by Airlock: {reason}")
        .chars()
        .map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' })
        .take(200)
        .collect();
    if let Ok(phrase) = hyper::ext::ReasonPhrase::try_from(phrase.into_bytes()) {
        response.extensions_mut().insert(phrase);
    }
    response
}

fn refuse(state: &Forward, method: &Method, url: String, refused: Disallowed) -> Response<Body> {
    report(
        state,
        Egress {
            method: method.to_string(),
            host: refused.host,
            url,
            allowed: false,
            status: Some(refused.status),
            bytes: 0,
            reason: Some(refused.reason.clone()),
        },
    );
    refusal(refused.status, &refused.reason)
}

/// A request on the proxy's own address: a CONNECT, or plain HTTP in absolute form.
async fn outer(state: Arc<Forward>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let uri = req.uri().clone();
    let host = uri.host().unwrap_or("").to_owned();
    if req.method() == Method::CONNECT {
        return Ok(connect(state, req));
    }
    if uri.scheme_str() != Some("http") {
        let reason = if uri.scheme_str() == Some("https") {
            "send https:// requests through a CONNECT tunnel (HTTPS_PROXY)"
        } else {
            "this is a forward proxy: send absolute http:// URLs, or CONNECT for https://"
        };
        let refused = Disallowed {
            status: 400,
            host,
            reason: reason.into(),
        };
        return Ok(refuse(&state, req.method(), uri.to_string(), refused));
    }
    let target = match rules::target(&state.config, "http", &host, uri.port_u16()) {
        Ok(target) => target,
        Err(refused) => return Ok(refuse(&state, req.method(), uri.to_string(), refused)),
    };
    let path = uri.path_and_query().map(|pq| pq.as_str()).unwrap_or("/").to_owned();
    Ok(fetch(&state, req, &target, "http", &path, uri.to_string().len()).await)
}

/// Opens a tunnel to an allowed host and serves the requests inside it once the program's TLS
/// handshake (with the run CA's certificate for that host) is done.
fn connect(state: Arc<Forward>, req: Request<Incoming>) -> Response<Body> {
    let authority = req.uri().authority().cloned();
    let host = authority.as_ref().map(|a| a.host()).unwrap_or("");
    let port = authority.as_ref().and_then(|a| a.port_u16());
    let shown = authority.as_ref().map(|a| a.to_string()).unwrap_or_default();
    let target = match rules::target(&state.config, "https", host, port.or(Some(443))) {
        Ok(target) => target,
        Err(refused) => return refuse(&state, &Method::CONNECT, shown, refused),
    };
    let tls = match state.ca.server_config(&target.host) {
        Ok(tls) => tls,
        Err(error) => {
            let refused = Disallowed {
                status: 502,
                host: target.host,
                reason: error.to_string(),
            };
            return refuse(&state, &Method::CONNECT, shown, refused);
        }
    };
    let tunnel_state = state.clone();
    state.tasks.spawn(async move {
        match hyper::upgrade::on(req).await {
            Ok(upgraded) => tunnel(tunnel_state, target, tls, upgraded).await,
            Err(error) => tracing::debug!(%error, "a CONNECT tunnel was not opened"),
        }
    });
    Response::new(Full::new(Bytes::new()).map_err(|never| match never {}).boxed_unsync())
}

async fn tunnel(
    state: Arc<Forward>,
    target: Target,
    tls: Arc<rustls::ServerConfig>,
    upgraded: hyper::upgrade::Upgraded,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let handshake = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        acceptor.accept(hyper_util::rt::TokioIo::new(upgraded)),
    );
    let failed = |detail: String| Egress {
        method: "CONNECT".into(),
        host: target.host.clone(),
        url: format!("{}:443", target.host),
        allowed: false,
        status: None,
        bytes: 0,
        reason: Some(format!(
            "no TLS session inside the tunnel ({detail}); only HTTPS to the named host passes, with the run's CA trusted"
        )),
    };
    let stream = tokio::select! {
        _ = state.cancel.cancelled() => return,
        handshake = handshake => match handshake {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return report(&state, failed(error.to_string())),
            Err(_) => return report(&state, failed("the handshake took too long".into())),
        },
    };
    let service_state = state.clone();
    let service_target = target.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let state = service_state.clone();
        let target = service_target.clone();
        async move {
            // Inside a tunnel the host is the tunnel's: a request naming another is answered
            // for the tunnel's host only.
            let path = req
                .uri()
                .path_and_query()
                .map(|pq| pq.as_str())
                .unwrap_or("/")
                .to_owned();
            let len = req.uri().to_string().len();
            Ok::<_, Infallible>(fetch(&state, req, &target, "https", &path, len).await)
        }
    });
    let conn = http1().serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    tokio::select! {
        _ = state.cancel.cancelled() => {}
        result = conn => if let Err(error) = result { head_error(&state, &target.host, &error) }
    }
}

/// Checks one request for `target` and fetches it upstream; reports it once either way.
async fn fetch(
    state: &Forward,
    req: Request<Incoming>,
    target: &Target,
    scheme: &str,
    path: &str,
    target_len: usize,
) -> Response<Body> {
    let method = req.method().clone();
    // Recorded as the program asked for it (a pinned host's real origin is the operator's).
    let url = format!("{scheme}://{}{path}", target.host);
    if let Err(refused) = rules::request(&state.config, &method, target_len, req.headers(), &target.host) {
        return refuse(state, &method, url, refused);
    }
    let event = |allowed: bool, status: Option<u16>, reason: Option<String>| Egress {
        method: method.to_string(),
        host: target.host.clone(),
        url: url.clone(),
        allowed,
        status,
        bytes: 0,
        reason,
    };
    let cap = state.config.max_total_bytes;
    if state.session.total.load(Ordering::Relaxed) >= cap {
        let reason = format!("the run's {cap} byte download cap is used up");
        report(state, event(false, Some(403), Some(reason.clone())));
        return refusal(403, &reason);
    }
    let upstream = state
        .client
        .request(method.clone(), format!("{}{path}", target.origin))
        .headers(rules::upstream_headers(req.headers()));
    let response = match upstream.send().await {
        Ok(response) => response,
        Err(error) => {
            let text = error_chain(&error);
            let refused = text.contains("non-public address");
            report(state, event(!refused, Some(502), Some(text.clone())));
            return refusal(502, &format!("the upstream fetch failed: {text}"));
        }
    };
    let status = response.status();
    let mut builder = Response::builder().status(status.as_u16());
    for name in rules::FORWARDED_RESPONSE_HEADERS {
        for value in response.headers().get_all(&name) {
            builder = builder.header(name.clone(), value.clone());
        }
    }
    if method == Method::HEAD {
        report(state, event(true, Some(status.as_u16()), None));
        return builder
            .body(Full::new(Bytes::new()).map_err(|never| match never {}).boxed_unsync())
            .unwrap_or_else(|_| proxy::full(StatusCode::BAD_GATEWAY, String::new()));
    }
    let body = Metered::body(
        response,
        state.session.clone(),
        cap,
        event(true, Some(status.as_u16()), None),
    );
    builder
        .body(body)
        .unwrap_or_else(|_| proxy::full(StatusCode::BAD_GATEWAY, String::new()))
}
