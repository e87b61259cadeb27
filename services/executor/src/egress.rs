//! The egress proxy: the package-install container's only way out.
//!
//! pip talks plain HTTP to the proxy as its index (`http://PROXY/pypi.org/simple/`), so every
//! request's method, host and path are visible here; the proxy fetches upstream over HTTPS.
//! It allows GET and HEAD only, to allow-listed host names only (never IP literals), connects
//! only to public addresses (checked at connect time, so a DNS answer cannot be swapped after
//! the check), caps the bytes of a whole install, and reports every request, allowed or not, as
//! an [`Egress`] event. Index pages are rewritten so that their file links point back through
//! the proxy; the `#sha256=` fragments in them stay, so pip still verifies every file.
//!
//! A CONNECT tunnel would hide the method and path inside TLS; this design never needs one, and
//! refuses it like any other method.

use crate::config::EgressConfig;
use crate::error::SandboxError;
use airlock_protocol::Egress;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode, header};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

type Body = UnsyncBoxBody<Bytes, std::io::Error>;
type Report = Arc<dyn Fn(Egress) + Send + Sync>;

/// Whether an address is on the public internet: not loopback, private (RFC 1918, unique
/// local), link-local, shared (CGNAT), multicast, broadcast, unspecified or reserved.
/// (Documentation ranges count as public: some networks answer with them for real hosts.)
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_unspecified()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && v4.octets()[2] == 0)
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
                // NAT64 and IPv4-compatible forms could reach private IPv4 space.
                || (v6.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0])
                || v6.segments()[..6] == [0, 0, 0, 0, 0, 0])
        }
    }
}

/// Why a request was refused before anything was fetched.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub host: String,
    pub reason: String,
}

/// The upstream URL a proxy path stands for: `/HOST/REST?QUERY` → `https://HOST/REST?QUERY`
/// (or the pinned origin), if the method and host are allowed.
pub fn upstream_for(config: &EgressConfig, method: &Method, uri: &hyper::Uri) -> Result<(String, String), Refusal> {
    let refuse = |status: u16, host: &str, reason: &str| Refusal {
        status,
        host: host.to_owned(),
        reason: reason.to_owned(),
    };
    if method != Method::GET && method != Method::HEAD {
        return Err(refuse(405, uri.host().unwrap_or(""), "only GET and HEAD are allowed"));
    }
    if uri.scheme().is_some() || uri.authority().is_some() {
        return Err(refuse(
            403,
            uri.host().unwrap_or(""),
            "absolute-form requests are refused: this is not a forward proxy",
        ));
    }
    let path = uri.path();
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (host, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host.to_ascii_lowercase();
    if host.is_empty() {
        return Err(refuse(404, "", "no host in the path"));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() || host.contains(':') {
        return Err(refuse(403, &host, "IP literals and ports are refused"));
    }
    let origin = match config.pinned.get(&host) {
        Some(pinned) => pinned.trim_end_matches('/').to_owned(),
        None if config.allow_hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) => format!("https://{host}"),
        None => return Err(refuse(403, &host, "host is not on the allow-list")),
    };
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Ok((host, format!("{origin}/{tail}{query}")))
}

/// Points every absolute link of an index page back through the proxy: a pinned origin becomes
/// its host's path, any other `http(s)://HOST/` becomes `/HOST/`. Links to hosts that are not
/// allowed are rewritten too, so that following one reaches the proxy, which refuses it and
/// reports the attempt, instead of failing unseen on the install network (which has no route).
pub fn rewrite_links(body: &[u8], config: &EgressConfig, proxy_origin: &str) -> Vec<u8> {
    let pinned: Vec<(String, String)> = config
        .pinned
        .iter()
        .map(|(host, origin)| (format!("{}/", origin.trim_end_matches('/')), host.to_ascii_lowercase()))
        .collect();
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let rest = &body[i..];
        if let Some((origin, host)) = pinned.iter().find(|(origin, _)| rest.starts_with(origin.as_bytes())) {
            out.extend_from_slice(format!("{proxy_origin}/{host}/").as_bytes());
            i += origin.len();
            continue;
        }
        let scheme = [&b"https://"[..], &b"http://"[..]]
            .into_iter()
            .find(|scheme| rest.len() > scheme.len() && rest[..scheme.len()].eq_ignore_ascii_case(scheme));
        if let Some(scheme) = scheme {
            let authority = &rest[scheme.len()..];
            let host_len = authority
                .iter()
                .position(|b| matches!(b, b'/' | b'"' | b'\'' | b'<' | b'>' | b'?' | b'#') || b.is_ascii_whitespace())
                .unwrap_or(authority.len());
            if host_len > 0 {
                out.extend_from_slice(proxy_origin.as_bytes());
                out.push(b'/');
                out.extend(authority[..host_len].iter().map(u8::to_ascii_lowercase));
                if authority.get(host_len) != Some(&b'/') {
                    out.push(b'/');
                }
                i += scheme.len() + host_len;
                continue;
            }
        }
        out.push(body[i]);
        i += 1;
    }
    out
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

struct State {
    config: EgressConfig,
    origin: String,
    client: reqwest::Client,
    total: AtomicU64,
    report: Report,
}

/// A running proxy; [`EgressProxy::stop`] ends it.
pub struct EgressProxy {
    addr: SocketAddr,
    state: Arc<State>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl EgressProxy {
    /// Listens on `bind` (the internal network's gateway address, so only that network reaches
    /// it) and reports each request through `report`.
    pub async fn start(
        bind: SocketAddr,
        config: EgressConfig,
        report: impl Fn(Egress) + Send + Sync + 'static,
    ) -> Result<EgressProxy, SandboxError> {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| SandboxError::Internal(format!("egress proxy cannot listen on {bind}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| SandboxError::Internal(format!("egress proxy address: {e}")))?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(PublicOnly))
            .connect_timeout(Duration::from_secs(15))
            .timeout(Duration::from_secs(config.upstream_timeout_secs))
            .user_agent("airlock-egress/0.1")
            .build()
            .map_err(|e| SandboxError::Internal(format!("egress proxy client: {e}")))?;
        let state = Arc::new(State {
            config,
            origin: format!("http://{addr}"),
            client,
            total: AtomicU64::new(0),
            report: Arc::new(report),
        });
        let cancel = CancellationToken::new();
        let task = tokio::spawn(serve(listener, state.clone(), cancel.clone()));
        Ok(EgressProxy {
            addr,
            state,
            cancel,
            task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What pip gets as `--index-url`.
    pub fn index_url(&self) -> String {
        format!(
            "{}/{}{}",
            self.state.origin, self.state.config.index_host, self.state.config.index_path
        )
    }

    /// Bytes fetched upstream so far.
    pub fn bytes(&self) -> u64 {
        self.state.total.load(Ordering::Relaxed)
    }

    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }
}

async fn serve(listener: tokio::net::TcpListener, state: Arc<State>, cancel: CancellationToken) {
    let connections = tokio_util::task::TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let state = state.clone();
        let cancel = cancel.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(state.clone(), req));
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

fn full(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(text))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let method = req.method().clone();
    let (host, url) = match upstream_for(&state.config, &method, req.uri()) {
        Ok(target) => target,
        Err(refusal) => {
            (state.report)(Egress {
                method: method.to_string(),
                host: refusal.host.clone(),
                url: req.uri().to_string(),
                allowed: false,
                status: Some(refusal.status),
                bytes: 0,
                reason: Some(refusal.reason.clone()),
            });
            let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
            return Ok(full(status, format!("airlock egress: {}\n", refusal.reason)));
        }
    };
    let event = |allowed: bool, status: Option<u16>, bytes: u64, reason: Option<String>| Egress {
        method: method.to_string(),
        host: host.clone(),
        url: url.clone(),
        allowed,
        status,
        bytes,
        reason,
    };
    let max_total = state.config.max_total_bytes;
    if state.total.load(Ordering::Relaxed) >= max_total {
        let reason = format!("the install's {max_total} byte download cap is used up");
        (state.report)(event(false, Some(403), 0, Some(reason.clone())));
        return Ok(full(StatusCode::FORBIDDEN, format!("airlock egress: {reason}\n")));
    }
    let mut upstream = state.client.request(method.clone(), &url);
    if let Some(accept) = req.headers().get(header::ACCEPT) {
        upstream = upstream.header(header::ACCEPT, accept);
    }
    // Bodies are rewritten and counted as they are: no compression.
    upstream = upstream.header(header::ACCEPT_ENCODING, "identity");
    let response = match upstream.send().await {
        Ok(response) => response,
        Err(error) => {
            let text = error_chain(&error);
            let refused = text.contains("non-public address");
            (state.report)(event(!refused, Some(502), 0, Some(text.clone())));
            return Ok(full(StatusCode::BAD_GATEWAY, format!("airlock egress: {text}\n")));
        }
    };
    let status = response.status();
    let mut builder = Response::builder().status(status.as_u16());
    if let Some(kind) = response.headers().get(header::CONTENT_TYPE) {
        builder = builder.header(header::CONTENT_TYPE, kind);
    }
    if let Some(location) = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()) {
        let rewritten = rewrite_links(location.as_bytes(), &state.config, &state.origin);
        builder = builder.header(header::LOCATION, rewritten);
    }
    let is_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.contains("html") || t.contains("json"));
    if method == Method::HEAD {
        (state.report)(event(true, Some(status.as_u16()), 0, None));
        return Ok(builder
            .body(Full::new(Bytes::new()).map_err(|never| match never {}).boxed_unsync())
            .unwrap_or_else(|_| full(StatusCode::BAD_GATEWAY, String::new())));
    }
    if is_page {
        let cap = state.config.max_page_bytes.min(max_total);
        let mut page = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    (state.report)(event(true, Some(502), page.len() as u64, Some(error_chain(&error))));
                    return Ok(full(
                        StatusCode::BAD_GATEWAY,
                        "airlock egress: upstream failed\n".into(),
                    ));
                }
            };
            let total = state.total.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
            page.extend_from_slice(&chunk);
            if page.len() as u64 > cap || total > max_total {
                let reason = format!("page larger than {cap} bytes or the install's {max_total} byte cap reached");
                (state.report)(event(false, Some(502), page.len() as u64, Some(reason.clone())));
                return Ok(full(StatusCode::BAD_GATEWAY, format!("airlock egress: {reason}\n")));
            }
        }
        let bytes = page.len() as u64;
        let page = rewrite_links(&page, &state.config, &state.origin);
        (state.report)(event(true, Some(status.as_u16()), bytes, None));
        return Ok(builder
            .header(header::CONTENT_LENGTH, page.len())
            .body(
                Full::new(Bytes::from(page))
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            )
            .unwrap_or_else(|_| full(StatusCode::BAD_GATEWAY, String::new())));
    }
    if let Some(length) = response.content_length() {
        builder = builder.header(header::CONTENT_LENGTH, length);
    }
    let metered = Metered {
        inner: response.bytes_stream().boxed(),
        state: state.clone(),
        bytes: 0,
        pending: Some(event(true, Some(status.as_u16()), 0, None)),
        failed: None,
    };
    let body = StreamBody::new(metered.map(|chunk| chunk.map(Frame::data))).boxed_unsync();
    Ok(builder
        .body(body)
        .unwrap_or_else(|_| full(StatusCode::BAD_GATEWAY, String::new())))
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// A streamed body that counts its bytes against the install's cap, cuts off past it, and
/// reports the request when it ends or is dropped.
struct Metered {
    inner: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    state: Arc<State>,
    bytes: u64,
    pending: Option<Egress>,
    failed: Option<String>,
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
                let total = self.state.total.fetch_add(len, Ordering::Relaxed) + len;
                if total > self.state.config.max_total_bytes {
                    let reason = format!(
                        "the install's {} byte download cap was reached",
                        self.state.config.max_total_bytes
                    );
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
            (self.state.report)(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> EgressConfig {
        EgressConfig::default()
    }

    fn target(method: Method, uri: &str) -> Result<(String, String), Refusal> {
        upstream_for(&config(), &method, &uri.parse().unwrap())
    }

    #[test]
    fn public_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.17.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            assert!(
                !is_public(private.parse().unwrap()),
                "{private} must not count as public"
            );
        }
        for public in ["151.101.0.223", "2a04:4e42::223", "8.8.8.8"] {
            assert!(is_public(public.parse().unwrap()), "{public} is public");
        }
    }

    #[test]
    fn requests_map_to_allowed_upstreams_only() {
        assert_eq!(
            target(Method::GET, "/pypi.org/simple/six/").unwrap(),
            ("pypi.org".into(), "https://pypi.org/simple/six/".into())
        );
        assert_eq!(
            target(Method::HEAD, "/files.pythonhosted.org/packages/a/b.whl?x=1")
                .unwrap()
                .1,
            "https://files.pythonhosted.org/packages/a/b.whl?x=1"
        );
        assert_eq!(target(Method::POST, "/pypi.org/simple/").unwrap_err().status, 405);
        assert_eq!(target(Method::PUT, "/pypi.org/simple/").unwrap_err().status, 405);
        assert_eq!(target(Method::CONNECT, "pypi.org:443").unwrap_err().status, 405);
        assert_eq!(target(Method::GET, "/evil.example/x").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "/1.1.1.1/x").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "/[::1]/x").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "/pypi.org:8080/x").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "http://pypi.org/simple/").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "/PyPI.org/simple/").unwrap().0, "pypi.org");
    }

    #[test]
    fn pinned_hosts_use_their_origin() {
        let mut c = config();
        c.pinned.insert("index.test".into(), "http://127.0.0.1:9/".into());
        let (host, url) = upstream_for(&c, &Method::GET, &"/index.test/simple/x/".parse().unwrap()).unwrap();
        assert_eq!(
            (host.as_str(), url.as_str()),
            ("index.test", "http://127.0.0.1:9/simple/x/")
        );
    }

    #[test]
    fn links_are_rewritten_through_the_proxy() {
        let page =
            br#"<a href="https://files.pythonhosted.org/packages/ab/six-1.16.0-py2.py3-none-any.whl#sha256=8a">six</a>
<a href="https://evil.example/x.whl">x</a>"#;
        let out = String::from_utf8(rewrite_links(page, &config(), "http://172.18.0.1:4000")).unwrap();
        assert!(out.contains(
            "http://172.18.0.1:4000/files.pythonhosted.org/packages/ab/six-1.16.0-py2.py3-none-any.whl#sha256=8a"
        ));
        assert!(
            out.contains("http://172.18.0.1:4000/evil.example/x.whl"),
            "links to other hosts go through the proxy too, which refuses and reports them: {out}"
        );
        let refused = upstream_for(
            &config(),
            &Method::GET,
            &"/evil.example/x.whl".parse::<hyper::Uri>().unwrap(),
        );
        assert_eq!(refused.map_err(|r| (r.status, r.host)), Err((403, "evil.example".to_owned())));
    }

    #[test]
    fn pinned_origins_and_odd_links_are_rewritten_once() {
        let mut c = config();
        c.pinned.insert("index.test".into(), "http://127.0.0.1:8080".into());
        let page = br#"<a href="http://127.0.0.1:8080/files/a.whl">a</a> <a href='HTTPS://Evil.Example:8443'>b</a> http:// https://x"#;
        let out = String::from_utf8(rewrite_links(page, &c, "http://gw:1")).unwrap();
        assert_eq!(
            out,
            r#"<a href="http://gw:1/index.test/files/a.whl">a</a> <a href='http://gw:1/evil.example:8443/'>b</a> http:// http://gw:1/x/"#
        );
    }
}
