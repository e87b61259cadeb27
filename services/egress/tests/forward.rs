//! The read-only forward proxy against a real HTTPS origin on loopback with a CA of its own
//! (pinned as `docs.test`, its CA given to the proxy as an upstream root), and real clients:
//! reqwest, curl and Python's urllib, each trusting only the run's CA. What must pass passes and
//! is recorded; what must not (other methods, bodies, long URLs, other hosts, IP literals, a
//! client that does not trust the run's CA, the byte cap) fails with a readable reason and is
//! recorded too.

#[path = "support/origin.rs"]
mod support;

use airlock_egress::forward::Listening;
use airlock_egress::{EgressConfig, ForwardProxy};
use airlock_protocol::Egress;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use support::{PAGE, origin};

struct Setup {
    proxy: ForwardProxy,
    records: Arc<Mutex<Vec<Egress>>>,
    dir: tempfile::TempDir,
    /// Where clients connect: the proxy's own address, or a relay to its unix socket.
    url: String,
}

impl Setup {
    async fn new(max_total_bytes: u64) -> Setup {
        Self::listening(max_total_bytes, None).await
    }

    /// A proxy on a unix socket in `dir`, reached through a TCP relay as the one inside a
    /// gVisor sandbox reaches it (`services/executor/src/bootstrap.py`).
    async fn on_unix_socket() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("egress.sock");
        let mut setup = Self::listening(1 << 20, Some((dir, socket.clone()))).await;
        let relay = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        setup.url = format!("http://{}", relay.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = relay.accept().await {
                let mut unix = tokio::net::UnixStream::connect(&socket).await.unwrap();
                tokio::spawn(async move { tokio::io::copy_bidirectional(&mut tcp, &mut unix).await });
            }
        });
        setup
    }

    async fn listening(max_total_bytes: u64, unix: Option<(tempfile::TempDir, std::path::PathBuf)>) -> Setup {
        let (origin, origin_ca) = origin().await;
        let (dir, at) = match unix {
            Some((dir, socket)) => (dir, Listening::Unix(socket)),
            None => (
                tempfile::tempdir().unwrap(),
                Listening::Tcp((Ipv4Addr::LOCALHOST, 0).into()),
            ),
        };
        let roots = dir.path().join("origin-ca.pem");
        std::fs::write(&roots, origin_ca).unwrap();
        let config = EgressConfig {
            read_only_hosts: vec!["docs.test".into()],
            pinned: [("docs.test".to_owned(), format!("https://127.0.0.1:{}", origin.port()))].into(),
            upstream_roots: vec![roots],
            max_total_bytes,
            ..Default::default()
        };
        let records = Arc::new(Mutex::new(Vec::new()));
        let sink = records.clone();
        let proxy = ForwardProxy::start(at, config, move |e| sink.lock().unwrap().push(e))
            .await
            .expect("the forward proxy starts");
        std::fs::write(dir.path().join("run-ca.pem"), proxy.ca_pem()).unwrap();
        let url = match proxy.listening() {
            Listening::Tcp(addr) => format!("http://{addr}"),
            Listening::Unix(_) => String::new(),
        };
        Setup {
            proxy,
            records,
            dir,
            url,
        }
    }

    fn url(&self) -> String {
        self.url.clone()
    }

    fn ca_file(&self) -> std::path::PathBuf {
        self.dir.path().join("run-ca.pem")
    }

    /// A client whose only proxy is this one and whose only root is the run's CA.
    fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .proxy(reqwest::Proxy::all(self.url()).unwrap())
            .tls_certs_only([reqwest::Certificate::from_pem(self.proxy.ca_pem().as_bytes()).unwrap()])
            .build()
            .unwrap()
    }

    async fn finish(self) -> Vec<Egress> {
        self.proxy.stop().await;
        self.records.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn gets_pass_through_the_tunnel_and_everything_else_is_refused_with_a_reason() {
    let setup = Setup::new(1 << 20).await;
    let client = setup.client();

    let page = client.get("https://docs.test/page").send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers().get("set-cookie").is_none(),
        "only plain fetch headers come back"
    );
    assert_eq!(page.text().await.unwrap(), PAGE);
    let head = client.head("https://docs.test/page").send().await.unwrap();
    assert_eq!(head.status(), 200);

    let forwarded = client
        .get("https://docs.test/headers")
        .header("cookie", "secret=1")
        .header("authorization", "Bearer secret")
        .header("x-exfil", "secret")
        .header("accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!forwarded.contains("cookie") && !forwarded.contains("authorization") && !forwarded.contains("x-exfil"));
    assert!(forwarded.contains("accept"), "{forwarded}");

    for (request, status, why) in [
        (
            client.post("https://docs.test/page").body("data"),
            405,
            "POST is refused",
        ),
        (client.put("https://docs.test/page").body("data"), 405, "PUT is refused"),
        (client.delete("https://docs.test/page"), 405, "DELETE is refused"),
        (
            client.get("https://docs.test/page").body("data"),
            400,
            "a request with a body",
        ),
        (
            client.get(format!("https://docs.test/page?q={}", "x".repeat(5000))),
            414,
            "more than the 4096 allowed",
        ),
        (
            client.get("https://docs.test/page").header("x-data", "y".repeat(9000)),
            431,
            "headers are",
        ),
        (
            client.get("http://evil.test/"),
            403,
            "evil.test is not on the read-only allow-list",
        ),
        (client.get("http://127.0.0.1/"), 403, "IP addresses are refused"),
        (client.get("http://docs.test:8080/"), 403, "only the standard port"),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{why}");
        let body = response.text().await.unwrap();
        assert!(body.contains(why), "{status}: {body}");
    }

    // A tunnel to a host that is not allowed, or to an address, is refused before any TLS.
    for url in ["https://evil.test/", "https://127.0.0.1/", "https://[::1]/"] {
        let error = client.get(url).send().await.unwrap_err();
        assert!(error.is_connect(), "{url}: {error:?}");
    }

    let records = setup.finish().await;
    let allowed: Vec<_> = records.iter().filter(|r| r.allowed).collect();
    assert_eq!(allowed.len(), 3, "{records:#?}");
    let get = allowed
        .iter()
        .find(|r| r.method == "GET" && r.url == "https://docs.test/page")
        .unwrap();
    assert_eq!(
        (get.host.as_str(), get.status, get.bytes),
        ("docs.test", Some(200), PAGE.len() as u64)
    );
    assert!(allowed.iter().any(|r| r.method == "HEAD" && r.status == Some(200)));
    let refused: Vec<_> = records.iter().filter(|r| !r.allowed).collect();
    assert_eq!(refused.len(), 12, "every refusal is recorded: {refused:#?}");
    for method in ["POST", "PUT", "DELETE", "CONNECT"] {
        assert!(refused.iter().any(|r| r.method == method), "{method}: {refused:#?}");
    }
    assert!(refused.iter().all(|r| r.reason.is_some() && r.bytes == 0));
    assert!(
        refused
            .iter()
            .any(|r| r.method == "CONNECT" && r.host == "evil.test" && r.status == Some(403))
    );
}

#[tokio::test]
async fn on_a_unix_socket_the_proxy_allows_and_refuses_alike_and_records_both() {
    let setup = Setup::on_unix_socket().await;
    let client = setup.client();
    let page = client.get("https://docs.test/page").send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.text().await.unwrap(), PAGE);
    let post = client.post("https://docs.test/page").body("data").send().await.unwrap();
    assert_eq!(post.status(), 405);
    assert!(post.text().await.unwrap().contains("POST is refused"));
    let other = client.get("https://example.com/").send().await;
    assert!(other.is_err(), "a host off the list gets no tunnel: {other:?}");
    let records = setup.finish().await;
    assert!(
        records
            .iter()
            .any(|e| e.allowed && e.method == "GET" && e.url == "https://docs.test/page"),
        "{records:#?}"
    );
    assert!(records.iter().any(|e| !e.allowed && e.method == "POST"), "{records:#?}");
    assert!(
        records.iter().any(|e| !e.allowed && e.host == "example.com"),
        "{records:#?}"
    );
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_run_ca_gets_nothing_and_is_recorded() {
    let setup = Setup::new(1 << 20).await;
    // The host's own trust (system roots): the run's CA is not in it.
    let host_client = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(setup.url()).unwrap())
        .build()
        .unwrap();
    let error = host_client.get("https://docs.test/page").send().await.unwrap_err();
    assert!(format!("{error:?}").to_lowercase().contains("certificate"), "{error:?}");
    // A second run's CA is another one: the first run's clients do not trust it.
    let other = Setup::new(1 << 20).await;
    assert_ne!(setup.proxy.ca_pem(), other.proxy.ca_pem());
    let cross = setup.client().get("https://docs.test/page").send().await;
    assert!(cross.is_ok(), "its own run's CA works: {cross:?}");
    let stale = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(other.url()).unwrap())
        .tls_certs_only([reqwest::Certificate::from_pem(setup.proxy.ca_pem().as_bytes()).unwrap()])
        .build()
        .unwrap();
    assert!(stale.get("https://docs.test/page").send().await.is_err());
    other.finish().await;
    let records = setup.finish().await;
    let failed = records
        .iter()
        .find(|r| r.method == "CONNECT")
        .expect("the failed handshake is recorded");
    assert!(!failed.allowed);
    assert!(
        failed.reason.as_deref().unwrap_or("").contains("no TLS session"),
        "{failed:?}"
    );
}

#[tokio::test]
async fn the_run_byte_cap_cuts_a_download_off() {
    let setup = Setup::new(3000).await;
    let client = setup.client();
    // Cut off mid-body, or before the head was flushed if the body came in one piece.
    let big = match client.get("https://docs.test/big").send().await {
        Ok(response) => response.bytes().await.map(|_| ()),
        Err(error) => Err(error),
    };
    assert!(big.is_err(), "a body past the cap is cut off");
    // (A new client: the cut-off response ended its connection.)
    let after = setup.client().get("https://docs.test/page").send().await.unwrap();
    assert_eq!(after.status(), 403);
    assert!(after.text().await.unwrap().contains("cap is used up"));
    let records = setup.finish().await;
    let cut = records.iter().find(|r| r.url.ends_with("/big")).unwrap();
    assert!(
        !cut.allowed && cut.reason.as_deref().unwrap_or("").contains("cap"),
        "{cut:?}"
    );
}

/// curl and Python's urllib, as a program would use them: proxy from the environment, the
/// run's CA as their only trust.
#[tokio::test]
async fn curl_and_urllib_fetch_through_the_proxy() {
    let setup = Setup::new(1 << 20).await;
    let ca = setup.ca_file();
    let proxy = setup.url();
    let run = move |program: &str, args: &[&str]| {
        let output = std::process::Command::new(program)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", std::env::var("HOME").unwrap_or_default())
            .env("HTTPS_PROXY", &proxy)
            .env("HTTP_PROXY", &proxy)
            .env("https_proxy", &proxy)
            .env("http_proxy", &proxy)
            .env("SSL_CERT_FILE", &ca)
            .env("CURL_CA_BUNDLE", &ca)
            .output()
            .unwrap_or_else(|e| panic!("{program} must be installed for this test: {e}"));
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let blocking = tokio::task::spawn_blocking(move || {
        let curl_get = run("curl", &["-sS", "--fail-with-body", "https://docs.test/page"]);
        let curl_post = run(
            "curl",
            &["-sS", "--fail-with-body", "-d", "x=1", "https://docs.test/page"],
        );
        let urllib = run(
            "python3",
            &[
                "-c",
                r#"
import urllib.request, urllib.error
print(urllib.request.urlopen("https://docs.test/page").read().decode())
try:
    urllib.request.urlopen("https://evil.test/")
except OSError as e:
    print("refused:", e)
try:
    urllib.request.urlopen(urllib.request.Request("https://docs.test/page", data=b"x"))
except urllib.error.HTTPError as e:
    print("post:", e.code, e.read().decode())
"#,
            ],
        );
        (curl_get, curl_post, urllib)
    });
    let (curl_get, curl_post, urllib) = blocking.await.unwrap();
    assert!(curl_get.0 && curl_get.1.contains(PAGE), "{curl_get:?}");
    assert!(!curl_post.0 && curl_post.1.contains("POST is refused"), "{curl_post:?}");
    assert!(urllib.0, "{urllib:?}");
    assert!(urllib.1.contains(PAGE), "{}", urllib.1);
    assert!(
        urllib.1.contains("refused:") && urllib.1.contains("evil.test is not on the read-only allow-list"),
        "the refusal's reason reaches the program: {}",
        urllib.1
    );
    assert!(urllib.1.contains("post: 405"), "{}", urllib.1);
    let records = setup.finish().await;
    assert_eq!(records.iter().filter(|r| r.allowed).count(), 2, "{records:#?}");
    assert_eq!(records.iter().filter(|r| !r.allowed).count(), 3, "{records:#?}");
}
