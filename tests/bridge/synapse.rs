//! A real Synapse homeserver on a free loopback port, SQLite, in a temporary directory; users
//! registered with Synapse's own `register_new_matrix_user`. Installed by `ops/install-deps`
//! into its own venv (`$AIRLOCK_SYNAPSE_VENV`, default `/opt/airlock-synapse`); a missing
//! install fails the test with that message.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Synapse {
    child: Option<Child>,
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub url: String,
}

fn venv() -> PathBuf {
    let venv = std::env::var_os("AIRLOCK_SYNAPSE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/airlock-synapse"));
    assert!(
        venv.join("bin/python").exists(),
        "Synapse is not installed in {}: run ops/install-deps (or set AIRLOCK_SYNAPSE_VENV)",
        venv.display()
    );
    venv
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
    listener.local_addr().expect("address").port()
}

fn secret() -> String {
    let mut bytes = [0u8; 24];
    getrandom(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn getrandom(buf: &mut [u8]) {
    use std::io::Read as _;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .expect("random bytes");
}

impl Synapse {
    /// Rate limits raised out of the way: the tests of behaviour are not about them.
    pub fn start() -> Synapse {
        Self::start_with_limits(true)
    }

    /// Synapse's default rate limits on what the bot does (`rc_message`: 0.2 messages a second
    /// per user after a burst of 10; joins, invites), as a homeserver an admin runs has them. Only
    /// the test's own setup (registering and logging in its users) is allowed more.
    pub fn start_with_default_limits() -> Synapse {
        Self::start_with_limits(false)
    }

    fn start_with_limits(raised: bool) -> Synapse {
        let dir = tempfile::Builder::new()
            .prefix("airlock-synapse-")
            .tempdir()
            .expect("synapse dir");
        let port = free_port();
        let d = dir.path().display();
        let limit = "{per_second: 1000, burst_count: 1000}";
        let config = format!(
            r#"server_name: "localhost"
pid_file: {d}/homeserver.pid
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {d}/homeserver.db
media_store_path: {d}/media_store
registration_shared_secret: "{reg}"
report_stats: false
macaroon_secret_key: "{mac}"
form_secret: "{form}"
signing_key_path: "{d}/localhost.signing.key"
trusted_key_servers: []
suppress_key_server_warning: true
rc_registration: {limit}
rc_login:
  address: {limit}
  account: {limit}
  failed_attempts: {limit}
"#,
            reg = secret(),
            mac = secret(),
            form = secret(),
        );
        let config = if raised {
            config
                + &format!(
                    "rc_message: {limit}\nrc_joins:\n  local: {limit}\n  remote: {limit}\nrc_invites:\n  per_room: {limit}\n  per_user: {limit}\n  per_issuer: {limit}\n"
                )
        } else {
            config
        };
        std::fs::write(dir.path().join("homeserver.yaml"), config).expect("homeserver.yaml");
        let keys = Command::new(venv().join("bin/python"))
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(dir.path().join("homeserver.yaml"))
            .arg("--generate-keys")
            .output()
            .expect("synapse --generate-keys");
        assert!(
            keys.status.success(),
            "synapse --generate-keys failed: {}",
            String::from_utf8_lossy(&keys.stderr)
        );
        let mut synapse = Synapse {
            child: None,
            dir,
            port,
            url: format!("http://127.0.0.1:{port}"),
        };
        synapse.spawn();
        synapse
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("homeserver.yaml")
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("synapse.log"))
            .expect("synapse log");
        let child = Command::new(venv().join("bin/python"))
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(self.config())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("starting synapse");
        self.child = Some(child);
        self.wait_ready(Duration::from_secs(90));
    }

    fn wait_ready(&mut self, limit: Duration) {
        let start = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("synapse exited ({status}):\n{}", self.log_tail());
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                let ok = Command::new("curl")
                    .args(["-sf", &format!("{}/_matrix/client/versions", self.url)])
                    .output()
                    .map(|o| o.status.success())
                    .unwrap_or(false);
                if ok {
                    return;
                }
            }
            assert!(
                start.elapsed() < limit,
                "synapse did not answer within {limit:?}:\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("synapse.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(30).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(self.dir.path().join("homeserver.pid"));
    }

    /// Starts it again on the same port and database.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Registers a (non-admin) user with Synapse's own script.
    pub fn register(&self, name: &str, password: &str) {
        self.register_as(name, password, "--no-admin");
    }

    /// Registers a server admin (who may use Synapse's admin API).
    pub fn register_admin(&self, name: &str, password: &str) {
        self.register_as(name, password, "--admin");
    }

    fn register_as(&self, name: &str, password: &str, admin: &str) {
        let out = Command::new(venv().join("bin/register_new_matrix_user"))
            .arg("-c")
            .arg(self.config())
            .args(["-u", name, "-p", password, admin, &self.url])
            .output()
            .expect("register_new_matrix_user");
        assert!(
            out.status.success(),
            "registering {name} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        self.kill();
    }
}
