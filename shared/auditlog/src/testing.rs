//! A real SeaweedFS S3 server for tests (`weed mini`, every port a free loopback port, a
//! temporary directory). A missing `weed` binary fails the test loudly: `ops/install-deps`
//! installs it. Stopped when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const ACCESS_KEY: &str = "airlock-test";
pub const SECRET_KEY: &str = "airlock-test-secret";

pub struct SeaweedFs {
    child: Child,
    pub s3_port: u16,
    pub bucket: String,
    pub dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
    listener.local_addr().expect("address").port()
}

/// A port whose +10000 gRPC twin is free too (SeaweedFS derives gRPC ports that way when they
/// are not given).
fn free_port_pair() -> (u16, u16) {
    loop {
        let a = free_port();
        if a > 55_000 {
            continue;
        }
        let b = a + 10_000;
        if std::net::TcpListener::bind(("127.0.0.1", b)).is_ok() {
            return (a, b);
        }
    }
}

impl SeaweedFs {
    /// Starts `weed mini` with one bucket and waits until S3 answers. A port picked free can be
    /// taken by a parallel test before `weed` binds it (it then exits): such a start is tried
    /// again on fresh ports, a few times.
    pub async fn start(bucket: &str) -> SeaweedFs {
        let mut failures = Vec::new();
        for _ in 0..3 {
            let mut server = Self::spawn(bucket);
            match server.wait_ready().await {
                Ok(()) => return server,
                Err(why) => failures.push(why),
            }
        }
        panic!("SeaweedFS did not start in 3 attempts:\n{}", failures.join("\n---\n"));
    }

    fn spawn(bucket: &str) -> SeaweedFs {
        let dir = tempfile::tempdir().expect("temporary SeaweedFS directory");
        let mut args: Vec<String> = vec![
            "mini".into(),
            format!("-dir={}", dir.path().display()),
            "-ip=127.0.0.1".into(),
            "-ip.bind=127.0.0.1".into(),
            format!("-bucket={bucket}"),
            "-admin.ui=false".into(),
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            "-master.telemetry=false".into(),
            // `weed mini` sizes its volume count from free disk space and registers none when
            // the disk holds less than a volume or two (a CI machine after a cold build): fix
            // both so a test never waits on "no volume server capacity".
            "-volume.max=8".into(),
            "-master.volumeSizeLimitMB=32".into(),
        ];
        let s3_port = {
            let (http, grpc) = free_port_pair();
            args.push(format!("-s3.port={http}"));
            args.push(format!("-s3.port.grpc={grpc}"));
            http
        };
        for service in ["master", "volume", "filer"] {
            let (http, grpc) = free_port_pair();
            args.push(format!("-{service}.port={http}"));
            args.push(format!("-{service}.port.grpc={grpc}"));
        }
        let (admin, admin_grpc) = free_port_pair();
        args.push(format!("-admin.port={admin}"));
        args.push(format!("-admin.port.grpc={admin_grpc}"));
        args.push(format!("-webdav.port={}", free_port()));
        args.push(format!("-debug.port={}", free_port()));
        let log = std::fs::File::create(dir.path().join("weed.log")).expect("weed log file");
        let child = Command::new("weed")
            .args(&args)
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start SeaweedFS `weed` ({e}): run ops/install-deps"));
        SeaweedFs {
            child,
            s3_port,
            bucket: bucket.to_owned(),
            dir,
        }
    }

    /// The store URL of the bucket (credentials travel in the URL's query for tests).
    pub fn url(&self, prefix: &str) -> String {
        format!(
            "s3://{}/{prefix}?endpoint=http://127.0.0.1:{}&region=us-east-1&access_key_id={ACCESS_KEY}&secret_access_key={SECRET_KEY}",
            self.bucket, self.s3_port
        )
    }

    /// Waits until S3 answers; why not (with the log's tail) if `weed` exits or 60 s pass.
    async fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        let store = crate::store::Store::open(&self.url("ready")).expect("S3 store URL");
        loop {
            if store.put_blob("ready/probe", b"ok").await.is_ok() && store.check().await.is_ok() {
                return Ok(());
            }
            let exited = matches!(self.child.try_wait(), Ok(Some(_)));
            if exited || started.elapsed() > Duration::from_secs(60) {
                let log = std::fs::read_to_string(self.dir.path().join("weed.log")).unwrap_or_default();
                let tail: String = log.lines().rev().take(30).collect::<Vec<_>>().join("\n");
                let what = if exited {
                    "exited"
                } else {
                    "did not serve S3 within 60 s"
                };
                return Err(format!("SeaweedFS on port {} {what}; log tail:\n{tail}", self.s3_port));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
