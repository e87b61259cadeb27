//! The sandbox's one error type. A failing program is not an error (it is a [`crate::RunReport`]
//! with an exit code or a violation); these are the cases where Airlock could not run it.
//! Each keeps the error it comes from as its `source`, and [`SandboxError::is_permanent`] says
//! whether trying the same job again later could succeed.

use std::path::PathBuf;

/// Why the sandbox could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The Docker engine does not answer (not running, socket missing, connection dropped).
    /// Transient: the service should keep running and retry later.
    #[error("the Docker engine at {endpoint} is unreachable: {source}")]
    DockerUnreachable {
        endpoint: String,
        #[source]
        source: bollard::errors::Error,
    },
    /// The engine answered, with an error (mid-run, or an answer it could not make sense of).
    #[error("the Docker engine at {endpoint} failed to {action}: {source}")]
    Docker {
        endpoint: String,
        action: &'static str,
        #[source]
        source: bollard::errors::Error,
    },
    /// The sandbox image is not there; `airlock image build` (or [`crate::ensure_image`]) makes it.
    #[error(
        "the sandbox image {image} is missing; `airlock image build` builds airlock-sandbox images, an image of your own is yours to build (docs/sandbox.md)"
    )]
    ImageMissing { image: String },
    /// `[executor.observe] required = true`, and the kernel cannot observe runs here.
    #[error("{reason}")]
    ObservationRequired { reason: String },
    /// The image recipe failed, or its result is not what it should be.
    #[error("building the sandbox image failed: {detail}")]
    ImageBuild { detail: String },
    /// The engine refused to create or start a container.
    #[error("the {role} container could not be started: {source}")]
    StartFailed {
        role: &'static str,
        #[source]
        source: bollard::errors::Error,
    },
    /// The job asks for something the sandbox will not do (bad package spec, empty code).
    #[error("the job is invalid: {0}")]
    InvalidJob(String),
    /// The job's frame could not be written.
    #[error("the job's frame could not be encoded: {source}")]
    Frame {
        #[source]
        source: serde_json::Error,
    },
    /// Installing the requested packages failed (not found, refused by the egress proxy, too
    /// large, an unsafe archive); the program did not run.
    #[error("installing packages failed: {detail}")]
    Packages { detail: String },
    /// An approved wheel is not there, or its bytes differ from the digest that was assessed and
    /// approved: it is not installed, and the program does not run.
    #[error(transparent)]
    Wheel(#[from] crate::wheels::WheelError),
    /// The package cache cannot be used (another user's directory, a symbolic link).
    #[error("package cache {}: {detail}", dir.display())]
    PackageCache { dir: PathBuf, detail: String },
    /// The egress proxy could not serve the install.
    #[error("the egress proxy failed: {source}")]
    Egress {
        #[source]
        source: airlock_egress::EgressError,
    },
    /// A file or directory on the host (the package cache, the image's build directory).
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The run was cut off by the infrastructure after its job was handed to the container:
    /// the engine's connection or output stream was lost, or the container's end was never
    /// confirmed. The program may have run, in part or whole; its result is unknown, so none is
    /// made up. The container was killed (when the engine could be reached).
    #[error("interrupted: {reason}")]
    Interrupted { container: String, reason: String },
    /// The decision names a runtime this executor does not offer or the engine does not have
    /// registered. Nothing ran: a run is never moved to another runtime than the one signed.
    #[error("runtime {runtime} is not available: {reason}")]
    RuntimeUnavailable { runtime: &'static str, reason: String },
    /// The hosts a read-only decision grants are none, or lie outside this executor's
    /// `[executor.egress] read_only_hosts` (a gate configured apart from it). Nothing ran: a
    /// run's proxy never allows a list that was not signed, nor one wider than the operator's.
    #[error("the read-only hosts the decision grants cannot be given here: {0}")]
    HostsNotAllowed(String),
    /// [`crate::Sandbox::close`] or [`crate::Sandbox::shutdown`] was called. The job did not
    /// start: nothing of it ran.
    #[error("the sandbox is shutting down")]
    ShuttingDown,
    /// Anything else (a poisoned lock, a network without a gateway address).
    #[error("sandbox internal error: {0}")]
    Internal(String),
}

impl SandboxError {
    /// Whether the program may have run: only an interrupted run got as far as its container.
    /// Every other error happened before the job was handed over, so nothing of it ran and
    /// trying again later is safe.
    pub fn may_have_run(&self) -> bool {
        matches!(self, SandboxError::Interrupted { .. })
    }

    /// Whether the engine itself is gone (as opposed to refusing one request).
    pub fn is_docker_unreachable(&self) -> bool {
        matches!(self, SandboxError::DockerUnreachable { .. })
    }

    /// Whether the same job would fail again however long one waited: a missing image, an
    /// invalid job, packages that cannot be installed, a misconfigured cache. A dead engine, an
    /// engine error, a host I/O error or a shutdown are transient.
    pub fn is_permanent(&self) -> bool {
        match self {
            SandboxError::ImageMissing { .. }
            | SandboxError::ImageBuild { .. }
            | SandboxError::InvalidJob(_)
            | SandboxError::Frame { .. }
            | SandboxError::Packages { .. }
            | SandboxError::Wheel(_)
            | SandboxError::PackageCache { .. }
            | SandboxError::RuntimeUnavailable { .. }
            | SandboxError::HostsNotAllowed(_)
            | SandboxError::ObservationRequired { .. } => true,
            SandboxError::DockerUnreachable { .. }
            | SandboxError::Docker { .. }
            | SandboxError::StartFailed { .. }
            | SandboxError::Egress { .. }
            | SandboxError::Io { .. }
            | SandboxError::Interrupted { .. }
            | SandboxError::ShuttingDown
            | SandboxError::Internal(_) => false,
        }
    }
}

impl From<airlock_egress::EgressError> for SandboxError {
    fn from(source: airlock_egress::EgressError) -> Self {
        SandboxError::Egress { source }
    }
}

/// Sorts a bollard error into "the engine is gone" and "the engine said no".
pub(crate) fn from_docker(endpoint: &str, action: &'static str, error: bollard::errors::Error) -> SandboxError {
    use bollard::errors::Error as E;
    match error {
        E::SocketNotFoundError(_)
        | E::IOError { .. }
        | E::HyperResponseError { .. }
        | E::HyperLegacyError { .. }
        | E::RequestTimeoutError => SandboxError::DockerUnreachable {
            endpoint: endpoint.to_owned(),
            source: error,
        },
        source => SandboxError::Docker {
            endpoint: endpoint.to_owned(),
            action,
            source,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn errors_keep_their_source_and_say_whether_a_retry_could_help() {
        let gone = from_docker(
            "unix:///x",
            "list containers",
            bollard::errors::Error::SocketNotFoundError("/x".into()),
        );
        assert!(gone.is_docker_unreachable() && !gone.is_permanent());
        assert!(gone.source().is_some());
        let refused = from_docker(
            "unix:///x",
            "start a container",
            bollard::errors::Error::DockerResponseServerError {
                status_code: 500,
                message: "boom".into(),
            },
        );
        assert!(matches!(refused, SandboxError::Docker { .. }) && !refused.is_permanent());
        assert!(refused.to_string().contains("start a container") && refused.to_string().contains("boom"));
        assert!(refused.source().is_some());
        assert!(SandboxError::ImageMissing { image: "x".into() }.is_permanent());
        assert!(SandboxError::InvalidJob("empty".into()).is_permanent());
        assert!(!SandboxError::ShuttingDown.is_permanent());
    }
}
