//! The assessor's loop: consume submissions, rate each with the engine, publish the assessment
//! (carrying the request on to the gate). A submission that cannot be read or is invalid is
//! refused, and its request ends as failed, so Mai is never left waiting.

use crate::engine::EngineConfig;
use crate::shared::SharedEngine;
use airlock_bus::consume::{ConsumerSpec, DeliveryStream};
use airlock_bus::{Delivery, Publisher, ServiceCounters};
use airlock_protocol::event::Assessed;
use airlock_protocol::subjects::{EVENTS_STREAM, UNKNOWN_REQUEST};
use airlock_protocol::{Envelope, Event, EventKind, Outcome, Producer, Refusal, RefusalReason, RequestId, Terminal};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// The `[assessor]` section of the stack's config: the engine's settings.
pub type Config = EngineConfig;

#[derive(Debug, thiserror::Error)]
pub enum AssessorError {
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Bus(#[from] airlock_bus::BusError),
    #[error("publishing: {0}")]
    Publish(#[from] airlock_bus::PublishError),
    #[error("service API: {0}")]
    Service(String),
}

pub async fn run(client: async_nats::Client, config: Config, shutdown: CancellationToken) -> Result<(), AssessorError> {
    let engine = Arc::new(SharedEngine::new(config.clone())?);
    // Rule and threat files are also watched when configured; SIGHUP reloads either way.
    let _watcher = if config.watch { Some(engine.watch()?) } else { None };
    reload_on_hangup(engine.clone(), shutdown.clone());
    let js = async_nats::jetstream::new(client.clone());
    let publisher = Publisher::new(js.clone(), Producer::Assessor, shutdown.clone());
    let counters = ServiceCounters::default();
    let service = airlock_bus::start_service(
        &client,
        "airlock-assessor",
        "Rates code before it runs",
        counters.clone(),
    )
    .await
    .map_err(|e| AssessorError::Service(e.to_string()))?;
    let spec = ConsumerSpec {
        stream: EVENTS_STREAM.to_owned(),
        durable: "assessor".to_owned(),
        filter_subjects: vec![EventKind::Submitted.subject_filter()],
        ack_wait: Duration::from_secs(30),
        max_ack_pending: 256,
    };
    let mut deliveries = match DeliveryStream::open(js, spec, shutdown.clone()).await {
        Ok(d) => d,
        Err(_) if shutdown.is_cancelled() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    while let Some(delivery) = deliveries.next().await {
        let span = delivery.span("assessor");
        let outcome = handle(&engine, &publisher, &counters, &delivery).instrument(span).await;
        if !delivery.settle(outcome, &shutdown).await {
            break;
        }
    }
    let _ = service.stop().await;
    Ok(())
}

async fn handle(
    engine: &SharedEngine,
    publisher: &Publisher,
    counters: &ServiceCounters,
    delivery: &Delivery,
) -> Result<(), AssessorError> {
    let envelope = match delivery.envelope() {
        Ok(e) => e,
        Err(error) => {
            let reason = RefusalReason::of_wire_error(&error);
            return refuse_and_end(publisher, counters, delivery, reason, error.to_string()).await;
        }
    };
    tracing::Span::current().record("request_id", envelope.request_id.as_str());
    let Event::Submitted(request) = envelope.event else {
        return refuse_and_end(
            publisher,
            counters,
            delivery,
            RefusalReason::SubjectMismatch,
            "not a submission".into(),
        )
        .await;
    };
    if let Err(e) = request.validate() {
        return refuse_and_end(
            publisher,
            counters,
            delivery,
            RefusalReason::InvalidRequest,
            e.to_string(),
        )
        .await;
    }
    let current = engine.current();
    // The engine bounds its own time per request; the blocking pool keeps a slow file from
    // holding up the runtime.
    let rated = request.clone();
    let assessment = tokio::task::spawn_blocking(move || current.assess_request(&rated))
        .await
        .map_err(|e| AssessorError::Service(format!("assessment task failed: {e}")))?;
    counters.incr("assessed");
    counters.incr(match assessment.level {
        airlock_protocol::Level::Low => "low",
        airlock_protocol::Level::Medium => "medium",
        airlock_protocol::Level::High => "high",
        airlock_protocol::Level::Blocked => "blocked",
    });
    tracing::info!(level = %assessment.level, findings = assessment.findings.len(), elapsed_us = assessment.elapsed_us, "assessed");
    let assessed = Assessed { request, assessment };
    publisher
        .emit(&envelope.request_id, Event::Assessed(Box::new(assessed)))
        .await?;
    Ok(())
}

/// Refuses the message and, when its subject names a request, ends that request as failed.
async fn refuse_and_end(
    publisher: &Publisher,
    counters: &ServiceCounters,
    delivery: &Delivery,
    reason: RefusalReason,
    detail: String,
) -> Result<(), AssessorError> {
    counters.incr("refused");
    tracing::warn!(?reason, %detail, "refused a submission");
    let refusal = Refusal::of_message(reason, detail.clone(), delivery.subject(), delivery.payload());
    let rid = EventKind::parse_subject(delivery.subject()).and_then(|(_, r)| RequestId::parse(r).ok());
    let refusal_rid = rid
        .clone()
        .unwrap_or_else(|| RequestId::parse(UNKNOWN_REQUEST).unwrap_or_default());
    publisher
        .publish(&Envelope::new(refusal_rid, Producer::Assessor, Event::Refused(refusal)))
        .await?;
    if let Some(rid) = rid {
        let terminal = Terminal::without_run(Outcome::Failed, format!("the request was refused: {detail}"));
        publisher.emit(&rid, Event::Terminal(Box::new(terminal))).await?;
    }
    Ok(())
}

/// SIGHUP reloads the rules and the threat list; a failed reload keeps the current ones.
fn reload_on_hangup(engine: Arc<SharedEngine>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        let Ok(mut hangups) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP: rules reload only on restart");
            return;
        };
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = hangups.recv() => match engine.reload() {
                    Ok(_) => tracing::info!("rules and threat list reloaded"),
                    Err(e) => tracing::error!(error = %e, "reload failed; keeping the current rules"),
                },
            }
        }
    });
}
