//! Internal Docker networks whose only way out is an egress proxy on the network's gateway:
//! the package-install step's, and a read-only run's ([`ReadOnlyNet`]).
//!
//! An internal network has no route off its subnet; the proxy listens on the gateway address
//! only, and the container's resolver points at that address too, where nothing answers DNS, so
//! names cannot leak through Docker's resolver. A read-only run's container gets the proxy as
//! `HTTP_PROXY`/`HTTPS_PROXY` and the run's own CA (made by the proxy, its key never leaving
//! it) as its only trust: bind-mounted over the system bundle and named by the variables that
//! Python's `ssl`, `requests`, curl, pip and Node read. See docs/sandbox.md.
//!
//! Under gVisor a container cannot join such a network (runsc is registered with
//! `--network=none`): there a read-only run has no network interface at all, the proxy listens
//! on a unix socket bind-mounted into the container, and the bootstrap (PID 1's side, not the
//! program's) relays the program's connections to `127.0.0.1:`[`RELAY_PORT`] to it, under
//! gVisor's registration that may connect to host sockets (`[executor.runtimes]
//! runsc_read_only`).

use crate::SandboxEvent;
use crate::config::SandboxConfig;
use crate::docker::{self, ContainerEngine, NetworkMode};
use crate::error::SandboxError;
use airlock_egress::ForwardProxy;
use airlock_egress::forward::Listening;
use airlock_protocol::Runtime;
use bollard::models::{Ipam, NetworkCreateRequest};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// Where the bootstrap's relay listens inside a gVisor sandbox (gVisor's own loopback, which
/// nothing outside the sandbox shares): the program's `HTTP_PROXY`.
pub const RELAY_PORT: u16 = 3128;
/// Where the directory holding the proxy's socket appears in the container.
const RELAY_DIR: &str = "/run/airlock/egress";
/// The proxy's socket, in that directory.
const RELAY_SOCKET: &str = "egress.sock";

/// A read-only run's hosts, as its decision signs them, checked against this executor's own
/// `[executor.egress] read_only_hosts`: a gate's policy narrows that list, it never widens it.
/// A decision naming no host, or one outside it (a gate configured apart from this executor),
/// is refused before anything starts rather than run with a list nobody approved.
pub fn check_hosts(allowed: &[String], granted: &[String]) -> Result<(), SandboxError> {
    if granted.is_empty() {
        return Err(SandboxError::HostsNotAllowed(
            "the decision names no host the program may fetch from".into(),
        ));
    }
    let outside = airlock_protocol::hosts::uncovered(allowed, granted);
    if !outside.is_empty() {
        return Err(SandboxError::HostsNotAllowed(format!(
            "the decision grants {}, outside this executor's [executor.egress] read_only_hosts ({})",
            outside.join(", "),
            allowed.join(", ")
        )));
    }
    Ok(())
}

/// Where the run's CA appears in its container (besides the system bundle's path).
pub const RUN_CA_PATH: &str = "/etc/airlock/run-ca.pem";
/// The Debian system bundle, which OpenSSL's default paths lead to.
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Creates an internal network for `role` of `request_id`; returns its name and gateway.
pub async fn create_internal(
    engine: &ContainerEngine,
    config: &SandboxConfig,
    role: &str,
    request_id: &str,
) -> Result<(String, IpAddr), SandboxError> {
    let name = docker::object_name(config, role, request_id);
    engine
        .docker
        .create_network(NetworkCreateRequest {
            name: name.clone(),
            driver: Some("bridge".to_owned()),
            internal: Some(true),
            attachable: Some(false),
            ipam: Some(Ipam::default()),
            labels: Some(docker::labels(config, role, request_id)),
            ..Default::default()
        })
        .await
        .map_err(|e| engine.err("create an internal network", e))?;
    match gateway(engine, &name).await {
        Ok(gateway) => Ok((name, gateway)),
        Err(error) => {
            remove(engine, &name).await;
            Err(error)
        }
    }
}

async fn gateway(engine: &ContainerEngine, network: &str) -> Result<IpAddr, SandboxError> {
    let inspect = engine
        .docker
        .inspect_network(network, None::<bollard::query_parameters::InspectNetworkOptions>)
        .await
        .map_err(|e| engine.err("inspect an internal network", e))?;
    inspect
        .ipam
        .and_then(|ipam| ipam.config)
        .into_iter()
        .flatten()
        .filter_map(|c| c.gateway)
        .find_map(|g| g.parse::<IpAddr>().ok())
        .ok_or_else(|| SandboxError::Internal(format!("network {network} has no gateway address")))
}

/// Removes a network, retrying while its container's removal (which may run in the
/// background) has not finished; a network still left is removed at the next start.
pub async fn remove(engine: &ContainerEngine, name: &str) {
    for attempt in 0..20 {
        match engine.docker.remove_network(name).await {
            Ok(()) => return,
            Err(error) if attempt == 19 => {
                tracing::warn!(network = %name, %error, "removing an internal network; the next start removes it");
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// A read-only run's network and proxy, from before its container is created until after it
/// is gone.
pub struct ReadOnlyNet {
    way: Way,
    proxy: ForwardProxy,
    /// Holds the run's CA certificate, bind-mounted into the container (and, under gVisor, the
    /// proxy's socket, which the directory is mounted for).
    dir: tempfile::TempDir,
}

/// How the program reaches the run's proxy.
enum Way {
    /// An internal Docker network whose gateway the proxy listens on (runc).
    Network { name: String, gateway: IpAddr },
    /// No network: the proxy's unix socket, through the bootstrap's relay, under the engine
    /// runtime named (gVisor's registration that may connect to host sockets).
    Relay { runtime: String },
}

impl ReadOnlyNet {
    /// Makes the way out for a run under `runtime` and starts the run's proxy there, reporting
    /// each request to `events`.
    pub async fn open(
        engine: &ContainerEngine,
        config: &SandboxConfig,
        request_id: &str,
        runtime: Runtime,
        hosts: &[String],
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<ReadOnlyNet, SandboxError> {
        let dir = Self::run_dir(config)?;
        match runtime {
            Runtime::Runc => {
                let (name, gateway) = create_internal(engine, config, "readonly", request_id).await?;
                let at = Listening::Tcp(SocketAddr::new(gateway, 0));
                let way = Way::Network {
                    name: name.clone(),
                    gateway,
                };
                match Self::with_proxy(config, at, hosts, events, dir, way).await {
                    Ok(net) => Ok(net),
                    Err(error) => {
                        remove(engine, &name).await;
                        Err(error)
                    }
                }
            }
            Runtime::Runsc => {
                let at = Listening::Unix(dir.path().join(RELAY_SOCKET));
                let runtime = config.runtimes.runsc_read_only.clone();
                Self::with_proxy(config, at, hosts, events, dir, Way::Relay { runtime }).await
            }
        }
    }

    /// A directory of the run's own beside the package cache: a path the Docker host shares
    /// with this process, as the package mounts need too. Readable by the container's user (the
    /// certificate is public; the socket reaches only this run's proxy).
    fn run_dir(config: &SandboxConfig) -> Result<tempfile::TempDir, SandboxError> {
        let io = |e: std::io::Error| SandboxError::Internal(format!("making the run's proxy directory: {e}"));
        std::fs::create_dir_all(&config.packages.cache_dir).map_err(io)?;
        let dir = tempfile::Builder::new()
            .prefix("read-only-")
            .tempdir_in(&config.packages.cache_dir)
            .map_err(io)?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).map_err(io)?;
        Ok(dir)
    }

    async fn with_proxy(
        config: &SandboxConfig,
        at: Listening,
        hosts: &[String],
        events: UnboundedSender<SandboxEvent>,
        dir: tempfile::TempDir,
        way: Way,
    ) -> Result<ReadOnlyNet, SandboxError> {
        let report = move |egress| {
            let _ = events.send(SandboxEvent::Egress(egress));
        };
        // The proxy allows what the decision signed (checked by `check_hosts` to lie within
        // this executor's own list), and its CA signs certificates for those hosts only.
        let egress = airlock_egress::EgressConfig {
            read_only_hosts: hosts.to_vec(),
            ..config.egress.clone()
        };
        let proxy = ForwardProxy::start(at, egress, report).await?;
        let io = |e: std::io::Error| SandboxError::Internal(format!("writing the run's CA certificate: {e}"));
        let file = dir.path().join("run-ca.pem");
        std::fs::write(&file, proxy.ca_pem()).map_err(io)?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).map_err(io)?;
        Ok(ReadOnlyNet { way, proxy, dir })
    }

    /// How the run's container joins: the network, its environment and its mounts.
    pub fn container_parts(&self) -> (NetworkMode, Vec<String>, Vec<(String, String)>) {
        let proxy = match self.proxy.listening() {
            Listening::Tcp(addr) => format!("http://{addr}"),
            Listening::Unix(_) => format!("http://127.0.0.1:{RELAY_PORT}"),
        };
        let mut env = Vec::new();
        for key in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
            env.push(format!("{key}={proxy}"));
        }
        for key in ["NO_PROXY", "no_proxy"] {
            env.push(format!("{key}=localhost,127.0.0.1,::1"));
        }
        for key in [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "PIP_CERT",
            "NODE_EXTRA_CA_CERTS",
        ] {
            env.push(format!("{key}={RUN_CA_PATH}"));
        }
        let file = self.dir.path().join("run-ca.pem").display().to_string();
        let mut binds = vec![(file.clone(), RUN_CA_PATH.to_owned()), (file, SYSTEM_BUNDLE.to_owned())];
        let mode = match &self.way {
            Way::Network { name, gateway } => NetworkMode::Egress {
                network: name.clone(),
                gateway: gateway.to_string(),
            },
            Way::Relay { runtime } => {
                // Read by the bootstrap (PID 1's side), never passed on to the program.
                env.push(format!("AIRLOCK_RELAY={RELAY_PORT} {RELAY_DIR}/{RELAY_SOCKET}"));
                binds.push((self.dir.path().display().to_string(), RELAY_DIR.to_owned()));
                NetworkMode::Relay {
                    runtime: runtime.clone(),
                }
            }
        };
        (mode, env, binds)
    }

    /// Stops the proxy (every request reported) and removes the network once the container is
    /// gone (in `cleanup`, as container removals are).
    pub async fn close(self, engine: &ContainerEngine, cleanup: &tokio_util::task::TaskTracker) {
        self.proxy.stop().await;
        let engine = engine.clone();
        let (way, dir) = (self.way, self.dir);
        cleanup.spawn(async move {
            if let Way::Network { name, .. } = way {
                remove(&engine, &name).await;
            }
            drop(dir);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_run_gets_only_hosts_that_were_signed_and_lie_within_the_executors_list() {
        let allowed: Vec<String> = ["pypi.org", "*.example.org"].map(str::to_owned).into();
        let hosts = |list: &[&str]| check_hosts(&allowed, &list.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>());
        assert!(hosts(&["pypi.org"]).is_ok());
        assert!(hosts(&["data.example.org", "*.docs.example.org"]).is_ok());
        for refused in [&[][..], &["evil.test"], &["pypi.org", "example.org"], &["*.org"]] {
            match hosts(refused) {
                Err(error @ SandboxError::HostsNotAllowed(_)) => {
                    assert!(error.is_permanent() && !error.may_have_run(), "{error}")
                }
                other => panic!("{refused:?} must be refused: {other:?}"),
            }
        }
    }
}
