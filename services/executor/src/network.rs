//! Internal Docker networks whose only way out is an egress proxy on the network's gateway:
//! the package-install step's, and a read-only run's ([`ReadOnlyNet`]).
//!
//! An internal network has no route off its subnet; the proxy listens on the gateway address
//! only, and the container's resolver points at that address too, where nothing answers DNS, so
//! names cannot leak through Docker's resolver. A read-only run's container gets the proxy as
//! `HTTP_PROXY`/`HTTPS_PROXY` and the run's own CA (made by the proxy, its key never leaving
//! it) as its only trust: bind-mounted over the system bundle and named by the variables that
//! Python's `ssl`, `requests`, curl, pip and Node read. See docs/sandbox.md.

use crate::SandboxEvent;
use crate::config::SandboxConfig;
use crate::docker::{self, ContainerEngine, NetworkMode};
use crate::error::SandboxError;
use airlock_egress::ForwardProxy;
use bollard::models::{Ipam, NetworkCreateRequest};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// Why a read-only run is refused under runsc. gVisor is registered with the engine with
/// `--network=none` (what lets the `--network none` containers of every other run start), so a
/// container under it has loopback alone whatever network it joins: the run's proxy would be
/// unreachable and the program would fail with "no route to host" and no reason. Refused
/// before anything starts instead (docs/sandbox.md, "Read-only internet").
pub const READ_ONLY_UNDER_RUNSC: &str = "gVisor (runsc) is registered with the engine with --network=none, \
     so a container under it has no interface to reach the run's proxy; ask for network \"none\", \
     or have the gate's policy choose runc for code that needs read-only internet";

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
    name: String,
    gateway: IpAddr,
    proxy: ForwardProxy,
    /// Holds the run's CA certificate, bind-mounted into the container.
    ca_dir: tempfile::TempDir,
}

impl ReadOnlyNet {
    /// Creates the network and starts the run's proxy on its gateway, reporting each request
    /// to `events`.
    pub async fn open(
        engine: &ContainerEngine,
        config: &SandboxConfig,
        request_id: &str,
        hosts: &[String],
        events: UnboundedSender<SandboxEvent>,
    ) -> Result<ReadOnlyNet, SandboxError> {
        let (name, gateway) = create_internal(engine, config, "readonly", request_id).await?;
        match Self::with_proxy(config, &name, gateway, hosts, events).await {
            Ok(net) => Ok(net),
            Err(error) => {
                remove(engine, &name).await;
                Err(error)
            }
        }
    }

    async fn with_proxy(
        config: &SandboxConfig,
        name: &str,
        gateway: IpAddr,
        hosts: &[String],
        events: UnboundedSender<SandboxEvent>,
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
        let proxy = ForwardProxy::start(SocketAddr::new(gateway, 0), egress, report).await?;
        // Beside the package cache: a path the Docker host shares with this process, as the
        // package mounts need too. Readable by the container's user (the certificate is public).
        let io = |e: std::io::Error| SandboxError::Internal(format!("writing the run's CA certificate: {e}"));
        std::fs::create_dir_all(&config.packages.cache_dir).map_err(io)?;
        let ca_dir = tempfile::Builder::new()
            .prefix("run-ca-")
            .tempdir_in(&config.packages.cache_dir)
            .map_err(io)?;
        std::fs::set_permissions(ca_dir.path(), std::fs::Permissions::from_mode(0o755)).map_err(io)?;
        let file = ca_dir.path().join("run-ca.pem");
        std::fs::write(&file, proxy.ca_pem()).map_err(io)?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).map_err(io)?;
        Ok(ReadOnlyNet {
            name: name.to_owned(),
            gateway,
            proxy,
            ca_dir,
        })
    }

    /// How the run's container joins: the network, its environment and its mounts.
    pub fn container_parts(&self) -> (NetworkMode, Vec<String>, Vec<(String, String)>) {
        let proxy = format!("http://{}", self.proxy.addr());
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
        let file = self.ca_dir.path().join("run-ca.pem").display().to_string();
        let binds = vec![(file.clone(), RUN_CA_PATH.to_owned()), (file, SYSTEM_BUNDLE.to_owned())];
        let mode = NetworkMode::Egress {
            network: self.name.clone(),
            gateway: self.gateway.to_string(),
        };
        (mode, env, binds)
    }

    /// Stops the proxy (every request reported) and removes the network once the container is
    /// gone (in `cleanup`, as container removals are).
    pub async fn close(self, engine: &ContainerEngine, cleanup: &tokio_util::task::TaskTracker) {
        self.proxy.stop().await;
        let engine = engine.clone();
        let name = self.name;
        let ca_dir = self.ca_dir;
        cleanup.spawn(async move {
            remove(&engine, &name).await;
            drop(ca_dir);
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
