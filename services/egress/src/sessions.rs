//! The standalone proxy (`airlock-egress`): one data address that serves many installs, and a
//! control address where the executor opens a session per install.
//!
//! Control protocol (HTTP/1, newline-delimited JSON):
//! - `POST /sessions` answers 200 with a body that stays open for the session's lifetime: first
//!   a [`SessionOpened`] line, then one [`Egress`] record per request of the session as it
//!   ends, and an empty line every second (so a client that went away is noticed). The session
//!   ends when its client closes the connection or sends `DELETE /sessions/{token}`; the body
//!   ends once the session's last request has been reported.
//! - On the data address every path starts with the session's token: `/{token}/{host}/{rest}`
//!   (index pages' links are rewritten to carry it). A request without a live token is refused
//!   and reported to nobody, so the data address may listen where any install network's gateway
//!   reaches it (`0.0.0.0`) without becoming an open proxy.
//!
//! Keep the control address on loopback: whoever reaches it can open sessions.

use crate::config::EgressConfig;
use crate::error::EgressError;
use crate::proxy::{self, Body, Routes, Session, State};
use airlock_protocol::Egress;
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode, header};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Longest line a session's client accepts from the control stream.
const MAX_LINE_BYTES: usize = 1024 * 1024;
/// How long [`RemoteSession::close`] waits for the records of requests still in flight.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// The first line of a session's control stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionOpened {
    pub token: String,
    /// The data address's port.
    pub port: u16,
    /// The package index through the proxy, token included: `/{token}/{index_host}{index_path}`.
    pub index_route: String,
}

/// The live sessions, by token.
pub(crate) struct Registry {
    sessions: Mutex<HashMap<String, Live>>,
}

/// A session and the sender of its records, which tells whether its client still reads them.
struct Live {
    session: Arc<Session>,
    records: mpsc::UnboundedSender<Egress>,
}

impl Registry {
    /// The session of `token`, if it is live (its client still reads its records).
    pub(crate) fn session(&self, token: &str) -> Option<Arc<Session>> {
        let mut sessions = self.sessions.lock().ok()?;
        let live = sessions.get(token)?;
        if live.records.is_closed() {
            sessions.remove(token);
            return None;
        }
        Some(live.session.clone())
    }

    fn open(&self) -> (String, mpsc::UnboundedReceiver<Egress>) {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let (records, receiver) = mpsc::unbounded_channel();
        let report = records.clone();
        let session = Session::new(Arc::new(move |egress| {
            let _ = report.send(egress);
        }));
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|_, live| !live.records.is_closed());
            sessions.insert(token.clone(), Live { session, records });
        }
        (token, receiver)
    }

    fn close(&self, token: &str) -> bool {
        self.sessions
            .lock()
            .map(|mut sessions| sessions.remove(token).is_some())
            .unwrap_or(false)
    }
}

/// A running standalone proxy; [`EgressServer::stop`] ends it.
pub struct EgressServer {
    data: SocketAddr,
    control: SocketAddr,
    cancel: CancellationToken,
    tasks: TaskTracker,
}

impl EgressServer {
    /// Listens on `data` for installs and on `control` for the executor.
    pub async fn start(data: SocketAddr, control: SocketAddr, config: EgressConfig) -> Result<Self, EgressError> {
        let (data_listener, data) = proxy::listen(data).await?;
        let (control_listener, control) = proxy::listen(control).await?;
        let registry = Arc::new(Registry {
            sessions: Mutex::new(HashMap::new()),
        });
        let index_route = config.index_route();
        let state = Arc::new(State {
            client: proxy::upstream_client(&config)?,
            config,
            routes: Routes::Sessions(registry.clone()),
        });
        let cancel = CancellationToken::new();
        let tasks = TaskTracker::new();
        tasks.spawn(proxy::serve(data_listener, state, cancel.clone()));
        let control_state = Arc::new(Control {
            registry,
            port: data.port(),
            index_route,
        });
        tasks.spawn(serve_control(control_listener, control_state, cancel.clone()));
        tasks.close();
        Ok(EgressServer {
            data,
            control,
            cancel,
            tasks,
        })
    }

    pub fn data_addr(&self) -> SocketAddr {
        self.data
    }

    pub fn control_addr(&self) -> SocketAddr {
        self.control
    }

    /// What the executor's `[executor.egress] proxy` names.
    pub fn control_url(&self) -> String {
        format!("http://{}", self.control)
    }

    pub async fn stop(self) {
        self.cancel.cancel();
        self.tasks.wait().await;
    }
}

struct Control {
    registry: Arc<Registry>,
    port: u16,
    index_route: String,
}

async fn serve_control(listener: tokio::net::TcpListener, control: Arc<Control>, cancel: CancellationToken) {
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let control = control.clone();
        let cancel = cancel.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| answer_control(control.clone(), req));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = cancel.cancelled() => {}
                result = conn => if let Err(error) = result { tracing::debug!(%error, "egress control connection"); }
            }
        });
    }
    connections.close();
    connections.wait().await;
}

async fn answer_control(control: Arc<Control>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path();
    if req.method() == Method::POST && path == "/sessions" {
        return Ok(open_session(&control));
    }
    if req.method() == Method::DELETE
        && let Some(token) = path.strip_prefix("/sessions/")
    {
        let status = if control.registry.close(token) {
            StatusCode::NO_CONTENT
        } else {
            StatusCode::NOT_FOUND
        };
        return Ok(proxy::full(status, String::new()));
    }
    Ok(proxy::full(
        StatusCode::NOT_FOUND,
        "airlock egress: no such control path\n".into(),
    ))
}

fn open_session(control: &Control) -> Response<Body> {
    let (token, records) = control.registry.open();
    let opened = SessionOpened {
        index_route: format!("/{token}{}", control.index_route),
        token,
        port: control.port,
    };
    tracing::info!(token = %opened.token, "egress session opened");
    let first = json_line(&opened);
    let mut keepalive = tokio::time::interval(Duration::from_secs(1));
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let lines = futures::stream::unfold((records, keepalive), |(mut records, mut keepalive)| async move {
        let line = tokio::select! {
            record = records.recv() => json_line(&record?),
            _ = keepalive.tick() => Bytes::from_static(b"\n"),
        };
        Some((line, (records, keepalive)))
    });
    let body = futures::stream::once(async move { first })
        .chain(lines)
        .map(|line| Ok::<_, std::io::Error>(Frame::data(line)));
    Response::builder()
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .body(StreamBody::new(body).boxed_unsync())
        .unwrap_or_else(|_| proxy::full(StatusCode::INTERNAL_SERVER_ERROR, String::new()))
}

fn json_line<T: Serialize>(value: &T) -> Bytes {
    let mut line = serde_json::to_vec(value).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// A session with a standalone proxy, as its client (the executor) holds it: the records of the
/// session's requests go to the `report` given to [`RemoteSession::open`].
pub struct RemoteSession {
    control: String,
    client: reqwest::Client,
    opened: SessionOpened,
    reader: tokio::task::JoinHandle<()>,
}

impl RemoteSession {
    /// Opens a session on the proxy whose control address is `control` (`http://HOST:PORT`).
    pub async fn open(
        control: &str,
        report: impl Fn(Egress) + Send + Sync + 'static,
    ) -> Result<RemoteSession, EgressError> {
        let control = control.trim_end_matches('/').to_owned();
        let url = format!("{control}/sessions");
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|source| EgressError::Client { source })?;
        let response = client.post(&url).send().await.map_err(|source| EgressError::Control {
            url: url.clone(),
            source,
        })?;
        if response.status() != StatusCode::OK {
            return Err(EgressError::ControlAnswer {
                url,
                detail: format!("status {}", response.status()),
            });
        }
        let mut lines = Lines::new(response.bytes_stream().boxed());
        let first = lines.next().await.ok_or_else(|| EgressError::ControlAnswer {
            url: url.clone(),
            detail: "the session stream ended before it began".into(),
        })?;
        let opened: SessionOpened = serde_json::from_slice(&first).map_err(|e| EgressError::ControlAnswer {
            url: url.clone(),
            detail: format!("the first line is not a session: {e}"),
        })?;
        let reader = tokio::spawn(async move {
            while let Some(line) = lines.next().await {
                if line.is_empty() {
                    continue;
                }
                match serde_json::from_slice::<Egress>(&line) {
                    Ok(egress) => report(egress),
                    Err(error) => tracing::warn!(%error, "the egress proxy sent a line that is not a record"),
                }
            }
        });
        Ok(RemoteSession {
            control,
            client,
            opened,
            reader,
        })
    }

    pub fn token(&self) -> &str {
        &self.opened.token
    }

    /// What pip gets as `--index-url`, for a client that reaches the proxy's host at `host`.
    pub fn index_url(&self, host: IpAddr) -> String {
        format!(
            "http://{}{}",
            SocketAddr::new(host, self.opened.port),
            self.opened.index_route
        )
    }

    /// Ends the session and waits (bounded) until every record of it has been reported.
    pub async fn close(self) {
        let url = format!("{}/sessions/{}", self.control, self.opened.token);
        if let Err(error) = self.client.delete(&url).send().await {
            tracing::warn!(%error, "ending an egress session; it ends when this connection closes");
        }
        let mut reader = self.reader;
        if tokio::time::timeout(CLOSE_WAIT, &mut reader).await.is_err() {
            tracing::warn!("the egress proxy kept a session's record stream open; closing it");
            reader.abort();
        }
    }
}

/// Splits a byte stream into lines (without their newline), dropping any longer than
/// [`MAX_LINE_BYTES`]; ends when the stream ends or fails.
struct Lines {
    inner: futures::stream::BoxStream<'static, reqwest::Result<Bytes>>,
    buffer: Vec<u8>,
    skipping: bool,
}

impl Lines {
    fn new(inner: futures::stream::BoxStream<'static, reqwest::Result<Bytes>>) -> Self {
        Lines {
            inner,
            buffer: Vec::new(),
            skipping: false,
        }
    }

    async fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(at) = self.buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=at).take(at).collect();
                if std::mem::take(&mut self.skipping) {
                    continue;
                }
                return Some(line);
            }
            if self.buffer.len() > MAX_LINE_BYTES {
                self.buffer.clear();
                self.skipping = true;
            }
            match self.inner.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(error)) => {
                    tracing::debug!(%error, "the egress session stream failed");
                    return None;
                }
                None => return None,
            }
        }
    }
}
