//! `airlock mcp`: Airlock as a Model Context Protocol server, so that any MCP client (a desktop
//! assistant, an IDE agent) can use it as its code tool. Over stdio by default, the client
//! starting it; or over streamable HTTP on a loopback port (`--http 127.0.0.1:PORT`), each
//! call carrying the bearer token written to `$AIRLOCK_HOME/mcp/token`.
//!
//! Every call is a normal Airlock request of the server's own client user (`mcp` by default,
//! listed in `[clients] extra_users`): the same assessment, decision, sandbox and audit as Mai's,
//! and the same limits on rate and requests in flight, apart from Mai's.

use crate::home::Home;
use crate::mcp_tools::AirlockTools;
use anyhow::Context as _;
use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug, clap::Args)]
pub struct McpArgs {
    /// The client user the server submits as (it must be in `[clients] extra_users`).
    #[arg(long, default_value = "mcp")]
    pub user: String,
    /// Serve streamable HTTP on this loopback address (`127.0.0.1:0` picks a free port) instead
    /// of stdio.
    #[arg(long, value_name = "ADDRESS")]
    pub http: Option<SocketAddr>,
    /// Seconds a run tool waits for its result before answering with the run's status (the
    /// caller picks it up with `get_result`).
    #[arg(long, default_value_t = 120)]
    pub wait: u64,
}

pub async fn run(home: &Home, args: McpArgs) -> anyhow::Result<ExitCode> {
    // Logs go to stderr: on stdio, stdout carries the protocol itself.
    let _telemetry = airlock_telemetry::init(
        "airlock-mcp",
        &airlock_telemetry::TelemetryConfig {
            default_filter: Some("warn".into()),
            ..Default::default()
        },
    );
    let creds = home.creds(&args.user);
    if !creds.exists() {
        anyhow::bail!(
            "no credentials for client user {:?} ({}): add it to `extra_users` in the [clients] section of {} and \
             restart `airlock up`",
            args.user,
            creds.display(),
            home.config_file().display()
        );
    }
    let nats = crate::stack::connect(home, &args.user).await?;
    let client = airlock_client::Client::from_connection(nats, args.user.clone(), home.stack());
    let tools = AirlockTools::new(client, Duration::from_secs(args.wait));
    match args.http {
        None => {
            let running = tools
                .serve(rmcp::transport::stdio())
                .await
                .context("starting MCP on stdio")?;
            running.waiting().await.context("serving MCP on stdio")?;
        }
        Some(address) => serve_http(home, tools, address).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Streamable HTTP at `http://ADDRESS/mcp`, loopback only, each request with the bearer token.
async fn serve_http(home: &Home, tools: AirlockTools, address: SocketAddr) -> anyhow::Result<()> {
    if !address.ip().is_loopback() {
        anyhow::bail!(
            "--http {address}: MCP over HTTP is served on a loopback address only (127.0.0.1 or ::1); \
             reach it from elsewhere through your own authenticated proxy"
        );
    }
    let token = write_token(home)?;
    let shutdown = airlock_bus::runner::shutdown_on_signal();
    // Host names are checked (no DNS rebinding) and any browser Origin is refused: only MCP
    // clients, not web pages, talk to it.
    let mut config = StreamableHttpServerConfig::default().enforce_origin_validation();
    config.cancellation_token = shutdown.child_token();
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("listening on {address}"))?;
    let bound = listener.local_addr()?;
    eprintln!(
        "airlock mcp: serving MCP at http://{bound}/mcp (Authorization: Bearer <the token in {}>)",
        token_path(home).display()
    );
    let token = Arc::new(format!("Bearer {token}"));
    loop {
        let (stream, _) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accepting an MCP connection");
                    continue;
                }
            },
        };
        let service = service.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let authorized = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let mut service = service.clone();
                let token = token.clone();
                async move {
                    let presented = request.headers().get(hyper::header::AUTHORIZATION);
                    if presented.map(|v| v.as_bytes()) != Some(token.as_bytes()) {
                        return Ok(unauthorized());
                    }
                    tower_service::Service::call(&mut service, request)
                        .await
                        .map(|response| response.map(http_body_util::BodyExt::boxed))
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), authorized);
            if let Err(error) = connection.await {
                tracing::debug!(%error, "an MCP connection ended");
            }
        });
    }
    Ok(())
}

type Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;

fn unauthorized() -> hyper::Response<Body> {
    let body = http_body_util::Full::new(bytes::Bytes::from_static(
        b"missing or wrong bearer token (airlock mcp writes it to $AIRLOCK_HOME/mcp/token)\n",
    ));
    let mut response = hyper::Response::new(http_body_util::BodyExt::boxed(body));
    *response.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    response
}

pub fn token_path(home: &Home) -> std::path::PathBuf {
    home.root().join("mcp").join("token")
}

/// A fresh random token for this server's life, readable by its owner only.
fn write_token(home: &Home) -> anyhow::Result<String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("drawing the MCP token: {e}"))?;
    let token = hex::encode(bytes);
    let path = token_path(home);
    crate::stack::ensure_dir(path.parent().unwrap_or(home.root()))?;
    let _ = std::fs::remove_file(&path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(file, "{token}")?;
    Ok(token)
}
