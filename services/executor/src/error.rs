//! The sandbox's one error type. A failing program is not an error (it is a [`crate::RunReport`]
//! with an exit code or a violation); these are the cases where Airlock could not run it.

/// Why the sandbox could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The Docker engine does not answer (not running, socket missing, connection dropped).
    /// Transient: the service should keep running and retry later.
    #[error("the Docker engine at {endpoint} is unreachable: {detail}")]
    DockerUnreachable { endpoint: String, detail: String },
    /// The sandbox image is not there; `airlock image build` (or [`crate::ensure_image`]) makes it.
    #[error("the sandbox image {image} is missing; build it with `airlock image build`")]
    ImageMissing { image: String },
    /// Building the image from its recipe failed.
    #[error("building the sandbox image failed: {0}")]
    ImageBuild(String),
    /// The engine refused to create or start the container.
    #[error("the sandbox container could not be started: {0}")]
    StartFailed(String),
    /// The job asks for something the sandbox will not do (bad package spec, empty code).
    #[error("the job is invalid: {0}")]
    InvalidJob(String),
    /// Installing the requested packages failed (not found, refused by the egress proxy, too
    /// large); the program did not run.
    #[error("installing packages failed: {0}")]
    Packages(String),
    /// [`crate::Sandbox::shutdown`] was called.
    #[error("the sandbox is shutting down")]
    ShuttingDown,
    /// Anything else: a Docker API error mid-run, an unexpected answer, a host I/O error.
    #[error("sandbox internal error: {0}")]
    Internal(String),
}

impl SandboxError {
    /// Whether the engine itself is gone (as opposed to refusing one request).
    pub fn is_docker_unreachable(&self) -> bool {
        matches!(self, SandboxError::DockerUnreachable { .. })
    }
}

/// Sorts a bollard error into "the engine is gone" and "the engine said no".
pub(crate) fn from_docker(endpoint: &str, error: bollard::errors::Error) -> SandboxError {
    use bollard::errors::Error as E;
    match error {
        E::SocketNotFoundError(_)
        | E::IOError { .. }
        | E::HyperResponseError { .. }
        | E::HyperLegacyError { .. }
        | E::RequestTimeoutError => SandboxError::DockerUnreachable {
            endpoint: endpoint.to_owned(),
            detail: error.to_string(),
        },
        other => SandboxError::Internal(format!("Docker: {other}")),
    }
}
