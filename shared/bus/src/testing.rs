//! A real nats-server for tests: JetStream on, a free loopback port, a temporary store, no
//! authentication, the streams and buckets created. Stopped when dropped. A missing
//! `nats-server` binary fails the test with a message (`ops/install-deps` installs it).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NatsServer {
    child: Child,
    pub url: String,
    pub port: u16,
    pub store: tempfile::TempDir,
}

impl NatsServer {
    /// Starts a server and creates Airlock's streams and buckets on it.
    pub async fn start() -> NatsServer {
        let store = tempfile::tempdir().expect("temporary JetStream store");
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
            listener.local_addr().expect("address").port()
        };
        let server = Self::spawn(store, port);
        let client = server.client().await;
        let js = async_nats::jetstream::new(client);
        let start = Instant::now();
        loop {
            match crate::ensure_streams(&js, &crate::StreamSettings::default()).await {
                Ok(()) => break,
                Err(e) if start.elapsed() > Duration::from_secs(15) => {
                    panic!("JetStream set-up failed: {}", crate::error_text(&e))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        server
    }

    fn spawn(store: tempfile::TempDir, port: u16) -> NatsServer {
        let child = Self::spawn_child(store.path(), port);
        NatsServer {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            port,
            store,
        }
    }

    fn spawn_child(store: &std::path::Path, port: u16) -> Child {
        // max_payload has no command-line flag; the embedded stack sets it to 8 MiB too.
        let config = store.join("server.conf");
        std::fs::write(&config, "max_payload: 8388608\n").expect("server config");
        Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(store)
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start nats-server ({e}): run ops/install-deps"))
    }

    /// Kills the server (SIGKILL) and starts it again on the same port and store.
    pub async fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = Self::spawn_child(self.store.path(), self.port);
        let _ = self.client().await;
    }

    /// A plain client, connected.
    pub async fn client(&self) -> async_nats::Client {
        let start = Instant::now();
        loop {
            match async_nats::connect(&self.url).await {
                Ok(c) => return c,
                Err(e) if start.elapsed() > Duration::from_secs(10) => {
                    panic!("nats-server at {} did not answer: {e}", self.url)
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
