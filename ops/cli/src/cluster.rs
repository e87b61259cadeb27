//! A deployment past one machine: `airlock init --cluster` writes what a three-node (or larger)
//! NATS JetStream cluster and services on several hosts need, and `airlock setup` creates the
//! streams and buckets on it with the configured replicas.
//!
//! The cluster is NATS's own (routes, RAFT, replicated streams); Airlock only writes its
//! configuration. What `init --cluster` adds to an ordinary home:
//! - `tls/ca.pem`, `tls/ca.key`: the deployment's certificate authority (the key never leaves
//!   the operator's machine);
//! - `tls/<node>.pem`, `tls/<node>.key`: each node's certificate, valid for its name, its
//!   address and the `--san` names, used for clients (server authentication) and for routes
//!   between nodes (mutual authentication: only a node holding a certificate of this CA joins);
//! - `nats/<node>.conf`: each node's nats-server configuration (TLS, routes to every other
//!   node, JetStream, and the users and permissions of the roles table);
//! - `airlock.toml` with `[nats] urls`, `ca_file` and `replicas = 3`.
//!
//! Everything is created once: running it again keeps every key and certificate, and writes
//! the node configurations anew (they carry the users' public keys, which may have changed).
//! Paths inside the files are under `--root`, where the files will be on the hosts that run
//! them (`/airlock` in the compose deployment's containers).

use crate::config::{self, Layout};
use crate::home::Home;
use crate::stack;
use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Clone, Debug, clap::Args)]
pub struct InitArgs {
    /// Also write a clustered deployment: a CA, NATS node certificates and configurations, and
    /// an airlock.toml that reaches the nodes over TLS.
    #[arg(long)]
    pub cluster: bool,
    /// A NATS node: NAME, or NAME=ADDRESS when it is not reached by its name (repeatable,
    /// comma-separated; default nats-1,nats-2,nats-3).
    #[arg(long = "node", value_delimiter = ',', requires = "cluster")]
    pub nodes: Vec<String>,
    /// Another name or address every node certificate is valid for (repeatable); localhost and
    /// 127.0.0.1 always are, so that ports published on a host can be used.
    #[arg(long = "san", value_delimiter = ',', requires = "cluster")]
    pub sans: Vec<String>,
    /// Where this home will be on the hosts that run the deployment (default: where it is).
    #[arg(long, requires = "cluster")]
    pub root: Option<PathBuf>,
    /// Each node's JetStream directory; `{node}` is replaced by its name (default:
    /// ROOT/nats/{node}/jetstream).
    #[arg(long, requires = "cluster")]
    pub jetstream_dir: Option<String>,
    /// The audit store, e.g. `s3://airlock-audit?endpoint=http://s3:8333` (default: ROOT/audit).
    #[arg(long, requires = "cluster")]
    pub store: Option<String>,
    #[arg(long, default_value_t = 4222, requires = "cluster")]
    pub client_port: u16,
    #[arg(long, default_value_t = 6222, requires = "cluster")]
    pub cluster_port: u16,
}

/// One NATS node of the deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    /// How clients and the other nodes reach it.
    pub address: String,
}

impl Node {
    fn parse(spec: &str) -> anyhow::Result<Node> {
        let (name, address) = match spec.split_once('=') {
            Some((n, a)) => (n.trim(), a.trim()),
            None => (spec.trim(), spec.trim()),
        };
        let valid = |s: &str| {
            !s.is_empty()
                && s.len() <= 63
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        };
        if !valid(name) || !valid(address) {
            anyhow::bail!("--node {spec:?}: expected NAME or NAME=ADDRESS (letters, digits, '-', '_', '.')");
        }
        Ok(Node {
            name: name.to_owned(),
            address: address.to_owned(),
        })
    }
}

pub fn init(home: &Home, args: &InitArgs) -> anyhow::Result<ExitCode> {
    if !args.cluster {
        crate::up::init(home)?;
        return Ok(ExitCode::SUCCESS);
    }
    let specs: Vec<String> = if args.nodes.is_empty() {
        ["nats-1", "nats-2", "nats-3"].map(String::from).to_vec()
    } else {
        args.nodes.clone()
    };
    let nodes = specs
        .iter()
        .map(|s| Node::parse(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for (i, a) in nodes.iter().enumerate() {
        if nodes[i + 1..].iter().any(|b| b.name == a.name) {
            anyhow::bail!("node {} is named twice", a.name);
        }
    }
    if nodes.len() < 3 {
        // With two nodes, losing either loses the quorum: nothing would survive a node loss.
        anyhow::bail!("a cluster needs at least three nodes (got {})", nodes.len());
    }
    stack::ensure_dir(home.root())?;
    let users = stack::ensure_identities(home)?;
    let root = args.root.clone().unwrap_or_else(|| home.root().to_owned());
    let ca = Ca::load_or_create(&home.tls_dir())?;
    for node in &nodes {
        let mut names = vec![
            node.name.clone(),
            node.address.clone(),
            "localhost".into(),
            "127.0.0.1".into(),
        ];
        names.extend(args.sans.iter().cloned());
        names.dedup();
        ca.ensure_node_cert(&home.tls_dir(), &node.name, names)?;
    }
    let at_root = |p: &Path| root.join(p.strip_prefix(home.root()).unwrap_or(p));
    let jetstream = args.jetstream_dir.clone().unwrap_or_else(|| {
        at_root(&home.nats_dir())
            .join("{node}")
            .join("jetstream")
            .display()
            .to_string()
    });
    let settings = NodeSettings {
        tls_dir: at_root(&home.tls_dir()),
        jetstream,
        client_port: args.client_port,
        cluster_port: args.cluster_port,
    };
    stack::ensure_dir(&home.nats_dir())?;
    for node in &nodes {
        let text = node_config(node, &nodes, &settings, &users);
        let path = home.nats_dir().join(format!("{}.conf", node.name));
        airlock_protocol::keys::write_secret(&path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let urls: Vec<String> = nodes
        .iter()
        .map(|n| format!("tls://{}:{}", n.address, args.client_port))
        .collect();
    let layout = Layout {
        nats: format!(
            "replicas = 3\nurls = {urls:?}\n# Only servers with a certificate of this CA are accepted.\nca_file = {ca:?}\n",
            ca = at_root(&home.tls_dir().join("ca.pem")).display().to_string(),
        ),
        store: args
            .store
            .clone()
            .unwrap_or_else(|| format!("file://{}", at_root(&home.audit_store()).display())),
        root,
    };
    config::ensure_config_with(home, &layout)?;
    println!("cluster deployment in {}", home.root().display());
    for node in &nodes {
        println!(
            "  {:<10} nats/{}.conf  tls/{}.pem  ({}:{})",
            node.name, node.name, node.name, node.address, args.client_port
        );
    }
    println!("  CA         tls/ca.pem (tls/ca.key stays here: it issues every node certificate)");
    println!("Start the nodes, then create the streams with `airlock setup`.");
    Ok(ExitCode::SUCCESS)
}

/// Where a node's files are, as the node sees them.
struct NodeSettings {
    tls_dir: PathBuf,
    jetstream: String,
    client_port: u16,
    cluster_port: u16,
}

/// A node's nats-server configuration.
fn node_config(node: &Node, nodes: &[Node], settings: &NodeSettings, users: &[crate::nats_auth::UserKey]) -> String {
    let file = |name: String| format!("{:?}", settings.tls_dir.join(name).display().to_string());
    let tls = |indent: &str, verify: bool| {
        [
            "tls {".to_owned(),
            format!("  cert_file: {}", file(format!("{}.pem", node.name))),
            format!("  key_file: {}", file(format!("{}.key", node.name))),
            format!("  ca_file: {}", file("ca.pem".into())),
            format!("  verify: {verify}"),
            "  timeout: 5".to_owned(),
            "}".to_owned(),
        ]
        .join(&format!("\n{indent}"))
    };
    let routes: Vec<String> = nodes
        .iter()
        .filter(|n| n.name != node.name)
        .map(|n| format!("    nats-route://{}:{}", n.address, settings.cluster_port))
        .collect();
    let lines = [
        format!(
            "# Node {} of an Airlock deployment, written by `airlock init --cluster` (rewritten",
            node.name
        ),
        "# when it runs again). Clients connect over TLS and authenticate with their nkey; nodes".to_owned(),
        "# join each other over mutually authenticated TLS (certificates of the deployment's CA).".to_owned(),
        format!("server_name: {}", node.name),
        format!("listen: 0.0.0.0:{}", settings.client_port),
        // Above the largest envelope with room for headers, as for the embedded server.
        format!("max_payload: {}", 8 * 1024 * 1024),
        tls("", false),
        "jetstream {".to_owned(),
        format!("  store_dir: {:?}", settings.jetstream.replace("{node}", &node.name)),
        "  max_file_store: 10GB".to_owned(),
        "  max_memory_store: 256MB".to_owned(),
        "}".to_owned(),
        "cluster {".to_owned(),
        "  name: airlock".to_owned(),
        format!("  listen: 0.0.0.0:{}", settings.cluster_port),
        "  # Clients use the addresses they were given: a node's own (container) address is not in".to_owned(),
        "  # its certificate, so it is not advertised to them.".to_owned(),
        "  no_advertise: true".to_owned(),
        "  routes: [".to_owned(),
        routes.join("\n"),
        "  ]".to_owned(),
        format!("  {}", tls("  ", true)),
        "}".to_owned(),
        crate::nats_auth::authorization_block(users),
    ];
    lines.join("\n")
}

/// The deployment's certificate authority.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
}

const CA_NAME: &str = "Airlock deployment CA";
/// Node certificates are reissued (rerun `init --cluster` after removing them) well before
/// this; the CA outlives many of them.
const NODE_DAYS: i64 = 825;
const CA_DAYS: i64 = 3650;

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, CA_NAME);
    name.push(DnType::OrganizationName, "Airlock");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    // An hour back: hosts whose clocks are a little behind accept a certificate made just now.
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days);
}

impl Ca {
    /// Reads the CA of `dir`, or creates it.
    fn load_or_create(dir: &Path) -> anyhow::Result<Ca> {
        stack::ensure_dir(dir)?;
        let key_path = dir.join("ca.key");
        let cert_path = dir.join("ca.pem");
        if key_path.exists() {
            let pem = std::fs::read_to_string(&key_path).with_context(|| format!("reading {}", key_path.display()))?;
            let key =
                KeyPair::from_pem(&pem).with_context(|| format!("{} is not a private key", key_path.display()))?;
            if !cert_path.exists() {
                anyhow::bail!("{} exists without {}", key_path.display(), cert_path.display());
            }
            // Signing needs the CA's name and key only; both are what created ca.pem.
            return Ok(Ca {
                issuer: Issuer::new(ca_params(), key),
            });
        }
        let key = KeyPair::generate().context("generating the CA key")?;
        let mut params = ca_params();
        validity(&mut params, CA_DAYS);
        let cert = params.self_signed(&key).context("signing the CA certificate")?;
        airlock_protocol::keys::write_secret(&key_path, key.serialize_pem().as_bytes())?;
        std::fs::write(&cert_path, cert.pem())?;
        Ok(Ca {
            issuer: Issuer::new(ca_params(), key),
        })
    }

    /// Issues `dir/<node>.pem` for `names` unless the node has a certificate already.
    fn ensure_node_cert(&self, dir: &Path, node: &str, names: Vec<String>) -> anyhow::Result<()> {
        let cert_path = dir.join(format!("{node}.pem"));
        let key_path = dir.join(format!("{node}.key"));
        if cert_path.exists() && key_path.exists() {
            return Ok(());
        }
        let key = KeyPair::generate().context("generating a node key")?;
        let mut params = CertificateParams::new(names).context("the node certificate's names")?;
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, node);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        // Server for clients and for routes it accepts; client for the routes it dials.
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params, NODE_DAYS);
        let cert = params
            .signed_by(&key, &self.issuer)
            .with_context(|| format!("signing the certificate of {node}"))?;
        airlock_protocol::keys::write_secret(&key_path, key.serialize_pem().as_bytes())?;
        std::fs::write(&cert_path, cert.pem())?;
        Ok(())
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct SetupArgs {
    /// Keep trying this long while the cluster forms (seconds).
    #[arg(long, default_value_t = 120)]
    pub wait: u64,
}

/// `airlock setup`: creates (or brings up to date) the streams and buckets on the stack's NATS
/// as its administrator, with `[nats] replicas`, and prints where each one's replicas are.
pub async fn setup(home: &Home, args: &SetupArgs) -> anyhow::Result<ExitCode> {
    let replicas = config::nats_section(home)?.replicas;
    let admin = stack::connect_config(home, airlock_protocol::roles::ADMIN.user)?;
    let client = airlock_bus::connect(&admin).await?;
    let js = async_nats::jetstream::new(client);
    let settings = airlock_bus::StreamSettings {
        replicas,
        ..Default::default()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.wait);
    loop {
        match airlock_bus::ensure_streams(&js, &settings).await {
            Ok(()) => break,
            // A cluster still electing its meta leader answers "JetStream not enabled" or
            // times out for a while.
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(error = %airlock_bus::error_text(&e), "JetStream not ready");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(e).context(format!("creating the streams on {}", admin.url)),
        }
    }
    println!("streams and buckets ready on {} with {replicas} replicas", admin.url);
    for stream in crate::status::streams(&js).await? {
        println!("  {stream}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_names_or_names_with_addresses() {
        assert_eq!(
            Node::parse("nats-1").unwrap(),
            Node {
                name: "nats-1".into(),
                address: "nats-1".into()
            }
        );
        assert_eq!(Node::parse("n2=10.1.2.3").unwrap().address, "10.1.2.3");
        assert!(Node::parse("a b").is_err());
        assert!(Node::parse("=x").is_err());
    }

    #[test]
    fn a_node_config_routes_to_every_other_node_over_verified_tls() {
        let nodes: Vec<Node> = ["a", "b", "c"].iter().map(|n| Node::parse(n).unwrap()).collect();
        let settings = NodeSettings {
            tls_dir: PathBuf::from("/airlock/tls"),
            jetstream: "/data/{node}".into(),
            client_port: 4222,
            cluster_port: 6222,
        };
        let text = node_config(&nodes[1], &nodes, &settings, &[]);
        assert!(text.contains("server_name: b\n"));
        assert!(text.contains("nats-route://a:6222") && text.contains("nats-route://c:6222"));
        assert!(!text.contains("nats-route://b:"), "no route to itself");
        assert!(text.contains("store_dir: \"/data/b\""));
        assert!(text.contains("verify: true"), "routes authenticate both ends");
        assert!(text.contains("cert_file: \"/airlock/tls/b.pem\""));
    }

    #[test]
    fn node_certificates_chain_to_the_ca_and_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Ca::load_or_create(dir.path()).unwrap();
        ca.ensure_node_cert(dir.path(), "nats-1", vec!["nats-1".into(), "127.0.0.1".into()])
            .unwrap();
        let first = std::fs::read(dir.path().join("nats-1.pem")).unwrap();
        // A second run with the CA read back from disk keeps what exists.
        let again = Ca::load_or_create(dir.path()).unwrap();
        again
            .ensure_node_cert(dir.path(), "nats-1", vec!["other".into()])
            .unwrap();
        assert_eq!(std::fs::read(dir.path().join("nats-1.pem")).unwrap(), first);
        // And a new node's certificate from the reloaded CA verifies against ca.pem.
        again
            .ensure_node_cert(dir.path(), "nats-2", vec!["nats-2".into()])
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile_certs(&dir.path().join("ca.pem")) {
            roots.add(cert).unwrap();
        }
        use rustls::client::danger::ServerCertVerifier as _;
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            std::sync::Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        for (node, name) in [("nats-1", "127.0.0.1"), ("nats-2", "nats-2")] {
            let chain = rustls_pemfile_certs(&dir.path().join(format!("{node}.pem")));
            let server = rustls::pki_types::ServerName::try_from(name.to_owned()).unwrap();
            verifier
                .verify_server_cert(&chain[0], &[], &server, &[], rustls::pki_types::UnixTime::now())
                .unwrap_or_else(|e| panic!("{node} as {name}: {e}"));
        }
        let chain = rustls_pemfile_certs(&dir.path().join("nats-2.pem"));
        let wrong = rustls::pki_types::ServerName::try_from("nats-3".to_owned()).unwrap();
        assert!(
            verifier
                .verify_server_cert(&chain[0], &[], &wrong, &[], rustls::pki_types::UnixTime::now())
                .is_err()
        );
    }

    fn rustls_pemfile_certs(path: &Path) -> Vec<rustls::pki_types::CertificateDer<'static>> {
        use rustls::pki_types::pem::PemObject as _;
        rustls::pki_types::CertificateDer::pem_file_iter(path)
            .unwrap()
            .map(|c| c.unwrap())
            .collect()
    }
}
