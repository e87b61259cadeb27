//! Airlock's egress proxy: the package-install container's only way out.
//!
//! pip talks plain HTTP to the proxy as its index (`http://PROXY/pypi.org/simple/`), so every
//! request's method, host and path are visible here; the proxy fetches upstream over HTTPS.
//! It allows GET and HEAD only, to allow-listed host names only (never IP literals), connects
//! only to public addresses (checked at connect time, so a DNS answer cannot be swapped after
//! the check), caps the bytes of a whole install, and reports every request, allowed or not, as
//! an [`Egress`](airlock_protocol::Egress) record. Index pages are rewritten so that their file
//! links point back through the proxy; the `#sha256=` fragments in them stay, so pip still
//! verifies every file. A CONNECT tunnel would hide the method and path inside TLS; this design
//! never needs one, and refuses it like any other method.
//!
//! It depends on nothing of the executor and needs no Docker socket. Two ways to run it:
//! - [`EgressProxy`]: one proxy per install, on the install network's gateway address, inside
//!   the executor's process (the default);
//! - [`EgressServer`] (the `airlock-egress` binary): one long-running proxy for many installs,
//!   each a session opened on its control address ([`RemoteSession`]), which streams the
//!   session's records back to whoever opened it (the executor, which publishes them).
//!
//! A third way, for programs run with `network = "read-only"`: [`ForwardProxy`], a forward
//! proxy (HTTP_PROXY/HTTPS_PROXY) that terminates TLS with a per-run CA, so that a program's
//! HTTPS requests are checked the same way (see [`forward`]).
//!
//! Reading order: [`config`], [`policy`] (the decisions, pure), [`proxy`] (the HTTP side),
//! [`sessions`] (the standalone server and its client).

pub mod config;
mod error;
pub mod forward;
pub mod policy;
pub mod proxy;
pub mod sessions;

pub use config::EgressConfig;
pub use error::EgressError;
pub use forward::ForwardProxy;
pub use proxy::EgressProxy;
pub use sessions::{EgressServer, RemoteSession};
