//! The `airlock-egress` binary as its own process, against a real upstream on loopback (pinned
//! as an operator pins a local mirror): a session opened on the control address carries the
//! records of its requests back, requests need a live token, and links come back through the
//! proxy with the token in them.

use airlock_egress::RemoteSession;
use airlock_protocol::Egress;
use http_body_util::Full;
use hyper::body::Bytes;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A package index with one page and one file.
async fn upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| async move {
                        let (kind, body) = match req.uri().path() {
                            "/simple/probe/" => (
                                "text/html",
                                format!("<a href=\"http://{addr}/files/probe-1.0.whl#sha256=00\">probe</a>\n"),
                            ),
                            "/files/probe-1.0.whl" => ("application/octet-stream", "W".repeat(5000)),
                            _ => ("text/plain", String::new()),
                        };
                        Ok::<_, std::convert::Infallible>(
                            hyper::Response::builder()
                                .header("content-type", kind)
                                .body(Full::new(Bytes::from(body)))
                                .unwrap(),
                        )
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_for(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("airlock-egress did not listen on {port}");
}

#[tokio::test]
async fn a_standalone_proxy_serves_sessions_and_streams_their_records_back() {
    let upstream = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("airlock.toml");
    std::fs::write(
        &config,
        format!(
            "[executor.egress]\nallow_hosts = [\"index.test\"]\nindex_host = \"index.test\"\n\
             index_path = \"/simple/\"\n[executor.egress.pinned]\n\"index.test\" = \"http://{upstream}\"\n"
        ),
    )
    .unwrap();
    let (data, control) = (free_port(), free_port());
    let _proxy = Proxy(
        Command::new(env!("CARGO_BIN_EXE_airlock-egress"))
            .args([
                "--listen",
                &format!("127.0.0.1:{data}"),
                "--control",
                &format!("127.0.0.1:{control}"),
            ])
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .spawn()
            .expect("airlock-egress"),
    );
    wait_for(data).await;
    wait_for(control).await;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Egress>();
    let session = RemoteSession::open(&format!("http://127.0.0.1:{control}"), move |e| {
        let _ = tx.send(e);
    })
    .await
    .expect("a session");
    let token = session.token().to_owned();
    let index = session.index_url(Ipv4Addr::LOCALHOST.into());
    assert_eq!(index, format!("http://127.0.0.1:{data}/{token}/index.test/simple/"));

    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let page = client
        .get(format!("{index}probe/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let link = format!("http://127.0.0.1:{data}/{token}/index.test/files/probe-1.0.whl#sha256=00");
    assert!(
        page.contains(&link),
        "the link comes back through the proxy, token included: {page}"
    );
    let file = client.get(link.split('#').next().unwrap()).send().await.unwrap();
    assert_eq!(file.status(), 200);
    assert_eq!(file.bytes().await.unwrap().len(), 5000);
    let refused = client
        .get(format!("http://127.0.0.1:{data}/{token}/evil.example/x"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let stranger = client
        .get(format!("http://127.0.0.1:{data}/{}/index.test/simple/", "0".repeat(32)))
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), 403, "a request without a live session is refused");

    session.close().await;
    let mut records = Vec::new();
    while let Ok(record) = rx.try_recv() {
        records.push(record);
    }
    assert_eq!(
        records.len(),
        3,
        "the page, the file and the refusal, nothing of the stranger: {records:?}"
    );
    assert!(records.iter().any(|r| r.url.ends_with("/simple/probe/") && r.allowed));
    assert!(
        records
            .iter()
            .any(|r| r.url.ends_with("probe-1.0.whl") && r.allowed && r.bytes == 5000)
    );
    assert!(
        records
            .iter()
            .any(|r| r.host == "evil.example" && !r.allowed && r.status == Some(403))
    );

    let after = client.get(format!("{index}probe/")).send().await.unwrap();
    assert_eq!(after.status(), 403, "a closed session's token no longer works");
}
