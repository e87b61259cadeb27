//! Why the proxy, or a session with a standalone one, could not be had.

use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("the egress proxy cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the egress proxy cannot listen on the unix socket {}: {source}", path.display())]
    ListenUnix {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the egress proxy's upstream client cannot be built: {source}")]
    Client {
        #[source]
        source: reqwest::Error,
    },
    /// The standalone proxy's control address did not answer.
    #[error("the egress proxy at {url} did not answer: {source}")]
    Control {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The standalone proxy answered something that is not a session.
    #[error("the egress proxy at {url} answered unexpectedly: {detail}")]
    ControlAnswer { url: String, detail: String },
    /// A certificate of a read-only run's CA could not be made.
    #[error("the egress proxy could not make {what}: {detail}")]
    Certificate { what: &'static str, detail: String },
    /// An extra upstream root (`upstream_roots`) could not be read.
    #[error("the egress proxy cannot read the upstream root {path}: {detail}")]
    UpstreamRoot { path: std::path::PathBuf, detail: String },
}
