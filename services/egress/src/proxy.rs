//! The proxy itself: an HTTP/1 server whose paths name an upstream (`/HOST/REST?QUERY`), which
//! it fetches over HTTPS (or from a pinned origin) when [`crate::policy`] allows it, counting
//! bytes against the install's cap and reporting every request, allowed or not, to the install
//! it belongs to (its [`Session`]).

use crate::config::EgressConfig;
use crate::error::EgressError;
use crate::policy::{is_public, rewrite_links, upstream_for};
use crate::sessions::Registry;
use airlock_protocol::{Egress, error_chain};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode, header};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub(crate) type Body = UnsyncBoxBody<Bytes, std::io::Error>;
pub(crate) type Recorder = Arc<dyn Fn(Egress) + Send + Sync>;

/// One install's share of the proxy: the bytes it fetched and where its requests are reported.
pub(crate) struct Session {
    pub(crate) total: AtomicU64,
    pub(crate) report: Recorder,
}

impl Session {
    pub(crate) fn new(report: Recorder) -> Arc<Session> {
        Arc::new(Session {
            total: AtomicU64::new(0),
            report,
        })
    }
}

/// How a request finds its session.
pub(crate) enum Routes {
    /// The proxy serves one install on an address of its own: every request is that install's.
    Single(Arc<Session>),
    /// A standalone proxy: the path's first segment is a session's token.
    Sessions(Arc<Registry>),
}

pub(crate) struct State {
    pub(crate) config: EgressConfig,
    pub(crate) client: reqwest::Client,
    pub(crate) routes: Routes,
}

/// Resolves names for the upstream client, refusing any name with a non-public address.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(private) = addrs.iter().find(|a| !is_public(a.ip())) {
                return Err(format!("{host} resolves to the non-public address {}", private.ip()).into());
            }
            if addrs.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The upstream client: no proxy of its own, no redirects followed (a redirect goes back to pip
/// through the proxy, which checks it like any request), public addresses only.
/// Pinned hosts whose origin is an IP address resolve to it (the forward proxy keeps the
/// host's name in the URL, so TLS is verified for that name); `upstream_roots` are trusted on
/// top of the system's roots.
pub(crate) fn upstream_client(config: &EgressConfig) -> Result<reqwest::Client, EgressError> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(PublicOnly))
        .connect_timeout(Duration::from_secs(15))
        .timeout(config.upstream_timeout)
        .user_agent("airlock-egress/0.1");
    for (host, origin) in &config.pinned {
        let ip = origin
            .parse::<hyper::Uri>()
            .ok()
            .and_then(|uri| uri.host().map(|h| h.trim_matches(['[', ']']).to_owned()))
            .and_then(|h| h.parse::<std::net::IpAddr>().ok());
        if let Some(ip) = ip {
            builder = builder.resolve(host, SocketAddr::new(ip, 0));
        }
    }
    let mut roots = Vec::new();
    for path in &config.upstream_roots {
        let unreadable = |detail: String| EgressError::UpstreamRoot {
            path: path.clone(),
            detail,
        };
        let pem = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| unreadable(error_chain(&e)))?;
        if certs.is_empty() {
            return Err(unreadable("no certificate in it".into()));
        }
        roots.extend(certs);
    }
    if !roots.is_empty() {
        builder = builder.tls_certs_merge(roots);
    }
    builder.build().map_err(|source| EgressError::Client { source })
}

/// Binds a listener, saying which address could not be taken.
pub(crate) async fn listen(addr: SocketAddr) -> Result<(tokio::net::TcpListener, SocketAddr), EgressError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| EgressError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| EgressError::Listen { addr, source })?;
    Ok((listener, bound))
}

/// A running proxy for one install; [`EgressProxy::stop`] ends it.
pub struct EgressProxy {
    addr: SocketAddr,
    state: Arc<State>,
    session: Arc<Session>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl EgressProxy {
    /// Listens on `bind` (the install network's gateway address, so only that network reaches
    /// it) and reports each request through `report`.
    pub async fn start(
        bind: SocketAddr,
        config: EgressConfig,
        report: impl Fn(Egress) + Send + Sync + 'static,
    ) -> Result<EgressProxy, EgressError> {
        let (listener, addr) = listen(bind).await?;
        let session = Session::new(Arc::new(report));
        let state = Arc::new(State {
            client: upstream_client(&config)?,
            config,
            routes: Routes::Single(session.clone()),
        });
        let cancel = CancellationToken::new();
        let task = tokio::spawn(serve(listener, state.clone(), cancel.clone()));
        Ok(EgressProxy {
            addr,
            state,
            session,
            cancel,
            task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What pip gets as `--index-url`.
    pub fn index_url(&self) -> String {
        format!("http://{}{}", self.addr, self.state.config.index_route())
    }

    /// Bytes fetched upstream so far.
    pub fn bytes(&self) -> u64 {
        self.session.total.load(Ordering::Relaxed)
    }

    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }
}

/// Accepts connections until `cancel`, each served by [`handle`].
pub(crate) async fn serve(listener: tokio::net::TcpListener, state: Arc<State>, cancel: CancellationToken) {
    let connections = tokio_util::task::TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        // The address the client reached us at: links handed back to it point there.
        let Ok(local) = stream.local_addr() else { continue };
        let state = state.clone();
        let cancel = cancel.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(state.clone(), local, req));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = cancel.cancelled() => {}
                result = conn => if let Err(error) = result { tracing::debug!(%error, "egress connection"); }
            }
        });
    }
    connections.close();
    connections.wait().await;
}

pub(crate) fn full(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(text))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response
}

/// A request matched to its install: its session, the origin that links handed back must
/// start with, and the proxy path below that origin.
struct Routed {
    session: Arc<Session>,
    origin: String,
    uri: hyper::Uri,
}

/// Finds the request's session; `Err` is the status and text of the answer to a request that
/// belongs to none.
fn route(state: &State, local: SocketAddr, uri: &hyper::Uri) -> Result<Routed, (StatusCode, &'static str)> {
    match &state.routes {
        Routes::Single(session) => Ok(Routed {
            session: session.clone(),
            origin: format!("http://{local}"),
            uri: uri.clone(),
        }),
        Routes::Sessions(registry) => {
            let path = uri.path().strip_prefix('/').unwrap_or(uri.path());
            let (token, rest) = path.split_once('/').unwrap_or((path, ""));
            let Some(session) = registry.session(token) else {
                // Nobody to report to: whoever sent it holds no live session.
                tracing::warn!(%local, "a request without a live session token was refused");
                return Err((StatusCode::FORBIDDEN, "airlock egress: no such session\n"));
            };
            let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
            let uri = format!("/{rest}{query}")
                .parse()
                .map_err(|_| (StatusCode::BAD_REQUEST, "airlock egress: bad path\n"))?;
            Ok(Routed {
                session,
                origin: format!("http://{local}/{token}"),
                uri,
            })
        }
    }
}

async fn handle(state: Arc<State>, local: SocketAddr, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let routed = match route(&state, local, req.uri()) {
        Ok(routed) => routed,
        Err((status, text)) => return Ok(full(status, text.into())),
    };
    let method = req.method().clone();
    let (host, url) = match upstream_for(&state.config, &method, &routed.uri) {
        Ok(target) => target,
        Err(refusal) => {
            (routed.session.report)(Egress {
                method: method.to_string(),
                host: refusal.host.clone(),
                url: routed.uri.to_string(),
                allowed: false,
                status: Some(refusal.status),
                bytes: 0,
                reason: Some(refusal.reason.clone()),
            });
            let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
            return Ok(full(status, format!("airlock egress: {}\n", refusal.reason)));
        }
    };
    let fetch = Fetch {
        state: state.clone(),
        session: routed.session,
        origin: routed.origin,
        method,
        host,
        url,
    };
    Ok(fetch.run(req.headers().get(header::ACCEPT).cloned()).await)
}

/// One allowed request, fetched upstream and reported once.
struct Fetch {
    state: Arc<State>,
    session: Arc<Session>,
    origin: String,
    method: Method,
    host: String,
    url: String,
}

impl Fetch {
    fn event(&self, allowed: bool, status: Option<u16>, bytes: u64, reason: Option<String>) -> Egress {
        Egress {
            method: self.method.to_string(),
            host: self.host.clone(),
            url: self.url.clone(),
            allowed,
            status,
            bytes,
            reason,
        }
    }

    fn report(&self, event: Egress) {
        (self.session.report)(event);
    }

    async fn run(self, accept: Option<header::HeaderValue>) -> Response<Body> {
        let max_total = self.state.config.max_total_bytes;
        if self.session.total.load(Ordering::Relaxed) >= max_total {
            let reason = format!("the install's {max_total} byte download cap is used up");
            self.report(self.event(false, Some(403), 0, Some(reason.clone())));
            return full(StatusCode::FORBIDDEN, format!("airlock egress: {reason}\n"));
        }
        let mut upstream = self.state.client.request(self.method.clone(), &self.url);
        if let Some(accept) = accept {
            upstream = upstream.header(header::ACCEPT, accept);
        }
        // Bodies are rewritten and counted as they are: no compression.
        upstream = upstream.header(header::ACCEPT_ENCODING, "identity");
        let response = match upstream.send().await {
            Ok(response) => response,
            Err(error) => {
                let text = error_chain(&error);
                let refused = text.contains("non-public address");
                self.report(self.event(!refused, Some(502), 0, Some(text.clone())));
                return full(StatusCode::BAD_GATEWAY, format!("airlock egress: {text}\n"));
            }
        };
        let status = response.status();
        let mut builder = Response::builder().status(status.as_u16());
        if let Some(kind) = response.headers().get(header::CONTENT_TYPE) {
            builder = builder.header(header::CONTENT_TYPE, kind);
        }
        if let Some(location) = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()) {
            let rewritten = rewrite_links(location.as_bytes(), &self.state.config, &self.origin);
            builder = builder.header(header::LOCATION, rewritten);
        }
        let is_page = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|t| t.to_str().ok())
            .is_some_and(|t| t.contains("html") || t.contains("json"));
        if self.method == Method::HEAD {
            self.report(self.event(true, Some(status.as_u16()), 0, None));
            return builder
                .body(Full::new(Bytes::new()).map_err(|never| match never {}).boxed_unsync())
                .unwrap_or_else(|_| full(StatusCode::BAD_GATEWAY, String::new()));
        }
        if is_page {
            return self.page(response, builder).await;
        }
        if let Some(length) = response.content_length() {
            builder = builder.header(header::CONTENT_LENGTH, length);
        }
        let body = Metered::body(
            response,
            self.session.clone(),
            max_total,
            self.event(true, Some(status.as_u16()), 0, None),
        );
        builder
            .body(body)
            .unwrap_or_else(|_| full(StatusCode::BAD_GATEWAY, String::new()))
    }

    /// An index page: read whole (under its own cap), its links pointed back through the proxy.
    async fn page(&self, response: reqwest::Response, builder: hyper::http::response::Builder) -> Response<Body> {
        let status = response.status();
        let max_total = self.state.config.max_total_bytes;
        let cap = self.state.config.max_page_bytes.min(max_total);
        let mut page = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    self.report(self.event(true, Some(502), page.len() as u64, Some(error_chain(&error))));
                    return full(StatusCode::BAD_GATEWAY, "airlock egress: upstream failed\n".into());
                }
            };
            let total = self.session.total.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
            page.extend_from_slice(&chunk);
            if page.len() as u64 > cap || total > max_total {
                let reason = format!("page larger than {cap} bytes or the install's {max_total} byte cap reached");
                self.report(self.event(false, Some(502), page.len() as u64, Some(reason.clone())));
                return full(StatusCode::BAD_GATEWAY, format!("airlock egress: {reason}\n"));
            }
        }
        let bytes = page.len() as u64;
        let page = rewrite_links(&page, &self.state.config, &self.origin);
        self.report(self.event(true, Some(status.as_u16()), bytes, None));
        builder
            .header(header::CONTENT_LENGTH, page.len())
            .body(
                Full::new(Bytes::from(page))
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            )
            .unwrap_or_else(|_| full(StatusCode::BAD_GATEWAY, String::new()))
    }
}

/// A streamed body that counts its bytes against the session's cap, cuts off past it, and
/// reports the request when it ends or is dropped.
pub(crate) struct Metered {
    inner: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    session: Arc<Session>,
    cap: u64,
    bytes: u64,
    pending: Option<Egress>,
    failed: Option<String>,
}

impl Metered {
    /// `response`'s body, metered; `pending` is reported with its byte count when it ends.
    pub(crate) fn body(response: reqwest::Response, session: Arc<Session>, cap: u64, pending: Egress) -> Body {
        let metered = Metered {
            inner: response.bytes_stream().boxed(),
            pending: Some(pending),
            cap,
            session,
            bytes: 0,
            failed: None,
        };
        StreamBody::new(metered.map(|chunk| chunk.map(Frame::data))).boxed_unsync()
    }
}

impl Stream for Metered {
    type Item = std::io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed.is_some() {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                let len = chunk.len() as u64;
                self.bytes += len;
                let total = self.session.total.fetch_add(len, Ordering::Relaxed) + len;
                if total > self.cap {
                    let reason = format!("the {} byte download cap was reached", self.cap);
                    self.failed = Some(reason.clone());
                    return Poll::Ready(Some(Err(std::io::Error::other(reason))));
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(error))) => {
                let text = error_chain(&error);
                self.failed = Some(text.clone());
                Poll::Ready(Some(Err(std::io::Error::other(text))))
            }
            other => other.map(|o| o.map(|r| r.map_err(std::io::Error::other))),
        }
    }
}

impl Drop for Metered {
    fn drop(&mut self) {
        if let Some(mut event) = self.pending.take() {
            event.bytes = self.bytes;
            if let Some(reason) = self.failed.take() {
                event.allowed = !reason.contains("cap");
                event.reason = Some(reason);
            }
            (self.session.report)(event);
        }
    }
}
