//! `airlock up`: the whole stack on one machine, in the foreground. It starts nats-server (unless
//! one is given), creates the streams, then runs each service as its own process
//! (`airlock serve <service>`), restarting any that dies, until interrupted.

use crate::config;
use crate::home::Home;
use crate::stack::{self, StackInfo};
use anyhow::Context as _;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Debug, clap::Args)]
pub struct UpArgs {
    /// Port for the embedded nats-server (default: `[nats] port` of airlock.toml; 0 for any).
    #[arg(long)]
    pub port: Option<u16>,
    /// Do not build the sandbox image when it is missing.
    #[arg(long)]
    pub no_image: bool,
}

struct Supervised {
    /// The `airlock serve` word.
    name: &'static str,
    child: Option<Child>,
    restarts: u32,
    last_start: Instant,
    /// When a dead service is due to be started again.
    restart_at: Option<Instant>,
}

impl Supervised {
    fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Notices an exit and schedules the restart, backing off when a service keeps dying at
    /// start so that its log stays readable.
    fn check(&mut self) {
        let Some(child) = self.child.as_mut() else { return };
        if let Ok(Some(status)) = child.try_wait() {
            let quick_death = self.last_start.elapsed() < Duration::from_secs(5);
            let backoff = if quick_death {
                Duration::from_secs(2u64.pow(self.restarts.min(5)))
            } else {
                Duration::ZERO
            };
            eprintln!("{} exited ({status}); restarting in {backoff:?}", self.name);
            self.child = None;
            self.restart_at = Some(Instant::now() + backoff);
        }
    }

    fn restart_if_due(&mut self, home: &Home) -> bool {
        match self.restart_at {
            Some(at) if at <= Instant::now() => match spawn_service(home, self.name) {
                Ok(child) => {
                    self.child = Some(child);
                    self.restarts += 1;
                    self.last_start = Instant::now();
                    self.restart_at = None;
                    true
                }
                Err(e) => {
                    eprintln!("cannot restart {}: {e:#}", self.name);
                    self.restart_at = Some(Instant::now() + Duration::from_secs(5));
                    false
                }
            },
            _ => false,
        }
    }
}

/// Creates (once) the stack's keys, NATS credentials and config; returns the NATS users.
pub fn init(home: &Home) -> anyhow::Result<Vec<crate::nats_auth::UserKey>> {
    stack::ensure_dir(home.root())?;
    let users = stack::ensure_identities(home)?;
    config::ensure_config(home)?;
    Ok(users)
}

pub async fn run(home: &Home, args: UpArgs) -> anyhow::Result<ExitCode> {
    stack::ensure_dir(home.root())?;
    stack::ensure_dir(&home.logs_dir())?;
    clear_stale_stack(home)?;
    let users = init(home)?;
    // Every section as its service will read it: a bad config stops here, with the key's path
    // (a mistake in a `--set` is said as one), and every key file a service needs is checked.
    let checked = config::check(home).and_then(|()| config::check_key_files(home));
    for warning in airlock_bus::runner::deprecations() {
        eprintln!("airlock up: {warning}");
    }
    if let Err(error) = checked {
        match home.set_mistake(&error) {
            Some(mistake) => anyhow::bail!("{mistake}"),
            None => return Err(error),
        }
    }
    let nats_config = config::nats_section(home)?;
    let (nats_url, mut nats_child) = start_nats(home, &args, &users, &nats_config)?;
    let admin = prepare_jetstream(home, &nats_url, &nats_config).await?;
    if !args.no_image {
        crate::image::ensure(home).await.context("the sandbox image")?;
    }

    let mut info = StackInfo {
        nats_url: nats_url.clone(),
        nats_pid: nats_child.as_ref().map(|n| n.0.id()),
        supervisor_pid: std::process::id(),
        services: BTreeMap::new(),
        started_ms: airlock_protocol::now_ms(),
    };
    // Written before the services start: they find NATS through it.
    info.write(&home.stack())?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    let mut services = start_services(home)?;
    info.services = pids(&services);
    info.write(&home.stack())?;
    print_banner(home, &nats_url, &services);

    let exit = supervise(home, &shutdown, &mut info, &mut nats_child, &mut services).await;
    stop(&mut services);
    drop(admin);
    drop(nats_child);
    std::fs::remove_file(home.stack_file()).ok();
    println!("stopped");
    Ok(exit)
}

/// Refuses to start beside a running stack; cleans up after one that died without doing so.
fn clear_stale_stack(home: &Home) -> anyhow::Result<()> {
    let Some(info) = StackInfo::read(&home.stack())? else {
        return Ok(());
    };
    if stack::alive(info.supervisor_pid) {
        anyhow::bail!(
            "a stack is already running from {} (pid {})",
            home.root().display(),
            info.supervisor_pid
        );
    }
    // A previous `up` died without cleaning up: its server may still run.
    if let Some(pid) = info.nats_pid.filter(|p| stack::alive(*p)) {
        eprintln!("stopping nats-server (pid {pid}) left by a previous run");
        terminate(pid, Duration::from_secs(5));
    }
    std::fs::remove_file(home.stack_file()).ok();
    Ok(())
}

/// `--nats`, else the deployment's servers (`[nats] urls`), else an embedded server started
/// here (returned, so that it stops with `up`).
fn start_nats(
    home: &Home,
    args: &UpArgs,
    users: &[crate::nats_auth::UserKey],
    nats_config: &config::NatsSection,
) -> anyhow::Result<(String, Option<NatsProcess>)> {
    let external = home
        .nats_override()
        .map(str::to_owned)
        .or_else(|| (!nats_config.urls.is_empty()).then(|| nats_config.urls.join(",")));
    if let Some(url) = external {
        return Ok((url, None));
    }
    let chosen = args.port.unwrap_or(nats_config.port);
    // A port picked free here can be taken by another process before nats-server binds it
    // (parallel stacks on one machine do): that server exits at once, and the start is tried
    // again on another free port.
    let attempts = if chosen == 0 { 3 } else { 1 };
    let mut failures = Vec::new();
    for _ in 0..attempts {
        let port = if chosen == 0 { stack::free_port()? } else { chosen };
        let server_config = stack::write_server_config(home, users, port)?;
        let mut child = NatsProcess(spawn_nats(home, &server_config)?, server_config);
        match wait_nats_ready(home, &mut child.0) {
            Ok(()) => return Ok((format!("nats://127.0.0.1:{port}"), Some(child))),
            Err(why) => failures.push(format!("port {port}: {why}")),
        }
    }
    anyhow::bail!(
        "nats-server did not start ({}); see {}",
        failures.join("; "),
        home.nats_dir().join("server.log").display()
    )
}

/// Waits until the server just started says it is ready in its log (its lines carry its pid),
/// or why not: it exited (a port taken, a bad config) or took too long.
fn wait_nats_ready(home: &Home, child: &mut Child) -> Result<(), String> {
    let ready = format!("[{}] ", child.id());
    let log = home.nats_dir().join("server.log");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("it exited ({status})"));
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text
            .lines()
            .any(|line| line.starts_with(&ready) && line.ends_with("Server is ready"))
        {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Err("it was not ready within 30 s".to_owned())
}

/// Connects as the admin user and creates or updates every stream and bucket.
async fn prepare_jetstream(
    home: &Home,
    nats_url: &str,
    nats_config: &config::NatsSection,
) -> anyhow::Result<async_nats::Client> {
    let admin_user = airlock_protocol::roles::ADMIN.user;
    let admin = airlock_bus::connect(
        &airlock_bus::ConnectConfig::for_user(nats_url.to_owned(), admin_user, home.creds(admin_user))
            .with_tls(nats_config.tls()?),
    )
    .await?;
    let js = async_nats::jetstream::new(admin.clone());
    let settings = airlock_bus::StreamSettings {
        replicas: nats_config.replicas,
        ..Default::default()
    };
    wait_for(Duration::from_secs(20), || async {
        airlock_bus::ensure_streams(&js, &settings).await
    })
    .await
    .with_context(|| format!("setting up JetStream on {nats_url}"))?;
    Ok(admin)
}

/// Starts every service this stack runs, in the table's order: the auditor first, so that it
/// logs everything the others publish.
fn start_services(home: &Home) -> anyhow::Result<Vec<Supervised>> {
    let mut services: Vec<Supervised> = crate::serve::started(&home.config()?)
        .into_iter()
        .map(|name| Supervised {
            name,
            child: None,
            restarts: 0,
            last_start: Instant::now(),
            restart_at: Some(Instant::now()),
        })
        .collect();
    for s in services.iter_mut() {
        s.restart_if_due(home);
    }
    Ok(services)
}

fn pids(services: &[Supervised]) -> BTreeMap<String, u32> {
    services
        .iter()
        .filter_map(|s| Some((s.name.to_owned(), s.pid()?)))
        .collect()
}

fn print_banner(home: &Home, nats_url: &str, services: &[Supervised]) {
    println!("Airlock is up.");
    println!("  home:      {}", home.root().display());
    println!("  nats:      {nats_url}");
    println!("  audit log: {}", home.audit_store().display());
    println!("  logs:      {}", home.logs_dir().display());
    for s in services {
        println!(
            "  {:<14} pid {}",
            s.name,
            s.pid().map(|p| p.to_string()).unwrap_or_else(|| "-".into())
        );
    }
    println!("Submit code with `airlock run FILE`; stop with Ctrl-C.");
}

/// Restarts what exits (the embedded server and the services) until shutdown; keeps
/// `stack.json` current. Fails only when the embedded server cannot be restarted.
async fn supervise(
    home: &Home,
    shutdown: &tokio_util::sync::CancellationToken,
    info: &mut StackInfo,
    nats_child: &mut Option<NatsProcess>,
    services: &mut [Supervised],
) -> ExitCode {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    while !shutdown.is_cancelled() {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        let mut changed = false;
        if let Some(NatsProcess(child, server_config)) = nats_child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            // JetStream's store is on disk, and every service reconnects by itself: a
            // restarted server loses nothing acknowledged.
            eprintln!("nats-server exited ({status}); restarting it");
            match spawn_nats(home, server_config) {
                Ok(new) => {
                    *child = new;
                    info.nats_pid = Some(child.id());
                    changed = true;
                }
                Err(e) => {
                    eprintln!("cannot restart nats-server: {e:#}");
                    return ExitCode::FAILURE;
                }
            }
        }
        for s in services.iter_mut() {
            s.check();
            changed |= s.restart_if_due(home);
        }
        if changed {
            info.services = pids(services);
            if let Err(e) = info.write(&home.stack()) {
                eprintln!("cannot update stack.json: {e:#}");
            }
        }
    }
    ExitCode::SUCCESS
}

/// Stops the services: the executor first (it may be running code), the auditor last (it logs
/// the others' last events).
fn stop(services: &mut [Supervised]) {
    println!("stopping services");
    for s in services.iter().rev() {
        if let Some(pid) = s.pid() {
            terminate(pid, Duration::from_secs(15));
        }
    }
    for s in services.iter_mut() {
        if let Some(child) = s.child.as_mut() {
            let _ = child.wait();
        }
    }
}

/// The embedded server, stopped when dropped: also when `up` fails half-way through starting.
struct NatsProcess(Child, std::path::PathBuf);

impl Drop for NatsProcess {
    fn drop(&mut self) {
        terminate(self.0.id(), Duration::from_secs(10));
        let _ = self.0.wait();
    }
}

fn spawn_nats(home: &Home, config: &std::path::Path) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.nats_dir().join("server.log"))?;
    Command::new("nats-server")
        .process_group(0)
        .arg("-c")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting nats-server (is it on PATH? `ops/install-deps` installs it)")
}

fn spawn_service(home: &Home, name: &str) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.logs_dir().join(format!("{name}.log")))?;
    Command::new(std::env::current_exe()?)
        // Own process groups: a Ctrl-C at the terminal reaches `up` alone, which then stops
        // the services in order (executor first, auditor last) and the server after them.
        .process_group(0)
        .args(["--home"])
        .arg(home.root())
        // The stack's `--set` settings reach every service it starts.
        .args(home.settings().iter().flat_map(|s| ["--set", s.as_str()]))
        .args(["serve", name])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {name}"))
}

/// SIGTERM, then SIGKILL after `grace`.
pub fn terminate(pid: u32, grace: Duration) {
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
    let start = Instant::now();
    while start.elapsed() < grace {
        let mut status = 0;
        // Reap it if it is our child; otherwise just poll for its disappearance.
        let reaped = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
        if reaped == pid as libc::pid_t || !stack::alive(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

async fn wait_for<F, Fut, T, E>(limit: Duration, mut attempt: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let start = Instant::now();
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) if start.elapsed() >= limit => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
