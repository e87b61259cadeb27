//! A forwarding Unix socket in front of the Docker engine, which a test can cut and restore: the
//! faults of a live engine connection (a dockerd restart with live-restore, a remote `tcp://`
//! engine behind a flaky network) made on demand. `[executor] docker_host` points at it.
//!
//! - [`EngineProxy::cut`] closes every connection passing through (both ends), and
//!   [`EngineProxy::outage`] also refuses new ones until [`EngineProxy::restore`];
//! - [`EngineProxy::cut_engine_side`] closes only the engine's end of every connection and keeps
//!   the client's end open a while before closing it too: the engine has given up on the
//!   connection while the executor has not heard of it yet. That is the window a busy machine
//!   opens by chance, held open long enough to act in. [`EngineProxy::cut_attach_engine_side`]
//!   does it to attach streams only (the connections the engine upgraded to raw streams: each
//!   container's stdin and output), leaving the executor's other calls alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

/// What the live connections are told to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Forward,
    /// Close both ends.
    Cut,
    /// Close the engine's end now, the client's after this long; of attach streams only when
    /// `attach_only`.
    CutEngineSide {
        later: Duration,
        attach_only: bool,
    },
}

pub struct EngineProxy {
    path: PathBuf,
    /// Each connection watches this; a new generation applies its order to the connections
    /// that existed before it.
    orders: watch::Sender<(u64, Order)>,
    refusing: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl EngineProxy {
    /// Listens on a fresh socket and forwards every connection to `engine` (a socket path).
    pub fn start(engine: &Path) -> std::io::Result<EngineProxy> {
        let dir = tempfile::Builder::new().prefix("airlock-engine-proxy-").tempdir()?;
        let path = dir.path().join("docker.sock");
        let listener = UnixListener::bind(&path)?;
        let (orders, _) = watch::channel((0u64, Order::Forward));
        let refusing = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(accept(
            listener,
            engine.to_owned(),
            orders.clone(),
            refusing.clone(),
            accepted.clone(),
        ));
        Ok(EngineProxy {
            path,
            orders,
            refusing,
            accepted,
            _dir: dir,
            task,
        })
    }

    /// `unix://...`, for `[executor] docker_host`.
    pub fn docker_host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    fn order(&self, order: Order) {
        self.orders.send_modify(|(generation, current)| {
            *generation += 1;
            *current = order;
        });
    }

    /// Closes every connection open now; new ones are forwarded.
    pub fn cut(&self) {
        self.order(Order::Cut);
    }

    /// Closes every connection open now and refuses new ones until [`EngineProxy::restore`].
    pub fn outage(&self) {
        self.refusing.store(true, Ordering::SeqCst);
        self.cut();
    }

    /// Forwards new connections again.
    pub fn restore(&self) {
        self.refusing.store(false, Ordering::SeqCst);
    }

    /// Closes the engine's end of every connection open now; their client ends close `later`.
    pub fn cut_engine_side(&self, later: Duration) {
        self.order(Order::CutEngineSide {
            later,
            attach_only: false,
        });
    }

    /// [`EngineProxy::cut_engine_side`] for the attach streams open now, and no other
    /// connection.
    pub fn cut_attach_engine_side(&self, later: Duration) {
        self.order(Order::CutEngineSide {
            later,
            attach_only: true,
        });
    }
}

impl Drop for EngineProxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut();
    }
}

async fn accept(
    listener: UnixListener,
    engine: PathBuf,
    orders: watch::Sender<(u64, Order)>,
    refusing: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if refusing.load(Ordering::SeqCst) {
            drop(client);
            continue;
        }
        accepted.fetch_add(1, Ordering::SeqCst);
        let orders = orders.subscribe();
        let engine = engine.clone();
        tokio::spawn(async move {
            if let Ok(upstream) = UnixStream::connect(&engine).await {
                forward(client, upstream, orders).await;
            }
        });
    }
}

/// Copies both ways until either end closes or an order ends the connection.
async fn forward(client: UnixStream, upstream: UnixStream, mut orders: watch::Receiver<(u64, Order)>) {
    let born = orders.borrow_and_update().0;
    let upgraded = AtomicBool::new(false);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut engine_read, mut engine_write) = upstream.into_split();
    // Each direction until its end, passing a half-close on (the executor closes a container's
    // stdin and goes on reading its output); the connection is over when both are.
    let copying = async {
        use tokio::io::AsyncWriteExt as _;
        let to_engine = async {
            let _ = tokio::io::copy(&mut client_read, &mut engine_write).await;
            let _ = engine_write.shutdown().await;
        };
        let to_client = async {
            from_engine(&mut engine_read, &mut client_write, &upgraded).await;
            let _ = client_write.shutdown().await;
        };
        tokio::join!(to_engine, to_client);
    };
    let order = async {
        loop {
            if orders.changed().await.is_err() {
                return Order::Cut;
            }
            let (generation, order) = *orders.borrow_and_update();
            let applies = match order {
                Order::Forward => false,
                Order::Cut => true,
                Order::CutEngineSide { attach_only, .. } => !attach_only || upgraded.load(Ordering::SeqCst),
            };
            if generation > born && applies {
                return order;
            }
        }
    };
    let order = tokio::select! {
        () = copying => return,
        order = order => order,
    };
    if let Order::CutEngineSide { later, .. } = order {
        // The engine's end closes now (its halves are dropped here); the client's end stays
        // open, silent, until `later`, then ends as a closed connection does (what the client
        // sent meanwhile is read and dropped, so that the close is an orderly end of stream).
        drop(engine_read);
        drop(engine_write);
        let _ = tokio::time::timeout(later, tokio::io::copy(&mut client_read, &mut tokio::io::sink())).await;
        use tokio::io::AsyncWriteExt as _;
        let _ = client_write.shutdown().await;
        let _ = tokio::time::timeout(
            Duration::from_millis(100),
            tokio::io::copy(&mut client_read, &mut tokio::io::sink()),
        )
        .await;
    }
}

/// Copies what the engine sends, noting when it upgrades the connection to a raw stream (its
/// answer to an attach is `HTTP/1.1 101 UPGRADED`).
async fn from_engine(
    engine: &mut tokio::net::unix::OwnedReadHalf,
    client: &mut tokio::net::unix::OwnedWriteHalf,
    upgraded: &AtomicBool,
) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = true;
    loop {
        let n = match engine.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if first && buf[..n].starts_with(b"HTTP/1.1 101") {
            upgraded.store(true, Ordering::SeqCst);
        }
        first = false;
        if client.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
