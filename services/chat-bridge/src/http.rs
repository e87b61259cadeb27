//! The bridge's HTTP endpoints, where Slack, Discord and webhook receivers deliver interactions:
//! `POST /slack/interactions`, `POST /discord/interactions`, `POST /webhook/answer`, and
//! `GET /health`. Bodies are capped; every request is checked by its system's signature before
//! anything in it is believed.

use crate::answers::Core;
use crate::discord::Discord;
use crate::interaction::Response;
use crate::slack::Slack;
use crate::webhook::Webhook;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Largest interaction accepted (Slack's and Discord's are a few KiB).
const MAX_BODY: usize = 64 * 1024;

pub struct Endpoints {
    pub core: Arc<Core>,
    pub slack: Option<Arc<Slack>>,
    pub discord: Option<Arc<Discord>>,
    pub webhook: Option<Arc<Webhook>>,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn respond(response: Response) -> axum::response::Response {
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if response.body.is_empty() {
        return status.into_response();
    }
    (status, [(header::CONTENT_TYPE, "application/json")], response.body).into_response()
}

async fn slack(State(e): State<Arc<Endpoints>>, headers: HeaderMap, body: Bytes) -> axum::response::Response {
    let Some(slack) = &e.slack else {
        return StatusCode::NOT_FOUND.into_response();
    };
    respond(
        slack
            .interaction(
                &e.core,
                header(&headers, "x-slack-request-timestamp"),
                header(&headers, "x-slack-signature"),
                &body,
            )
            .await,
    )
}

async fn discord(State(e): State<Arc<Endpoints>>, headers: HeaderMap, body: Bytes) -> axum::response::Response {
    let Some(discord) = &e.discord else {
        return StatusCode::NOT_FOUND.into_response();
    };
    respond(
        discord
            .interaction(
                &e.core,
                header(&headers, "x-signature-timestamp"),
                header(&headers, "x-signature-ed25519"),
                &body,
            )
            .await,
    )
}

async fn webhook(State(e): State<Arc<Endpoints>>, headers: HeaderMap, body: Bytes) -> axum::response::Response {
    let Some(webhook) = &e.webhook else {
        return StatusCode::NOT_FOUND.into_response();
    };
    respond(
        webhook
            .answer(
                &e.core,
                header(&headers, "x-airlock-timestamp"),
                header(&headers, "x-airlock-signature"),
                &body,
            )
            .await,
    )
}

async fn code_page(
    State(e): State<Arc<Endpoints>>,
    axum::extract::Path((request_id, token)): axum::extract::Path<(String, String)>,
) -> axum::response::Response {
    crate::code_page::serve(&e.core, &request_id, &token).await
}

pub fn router(endpoints: Arc<Endpoints>) -> axum::Router {
    axum::Router::new()
        .route("/slack/interactions", post(slack))
        .route("/discord/interactions", post(discord))
        .route("/webhook/answer", post(webhook))
        .route("/health", get(|| async { "ok" }))
        .route("/code/{request_id}/{token}", get(code_page))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(endpoints)
}

/// Serves until shut down.
pub async fn serve(listener: tokio::net::TcpListener, endpoints: Arc<Endpoints>, shutdown: CancellationToken) {
    let app = router(endpoints);
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
    {
        tracing::error!(error = %e, "the interaction endpoints stopped");
    }
}
