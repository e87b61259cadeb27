//! The service runner: what every service does on the bus besides deciding. A service is its
//! row of the roles table, its config and a [`Handler`]; the runner answers the NATS service API
//! and the status endpoint, opens the service's records and its durable consumer, hands each
//! delivery to the handler inside its trace span, and settles it by how the handling went (ack,
//! retry with backoff, or set aside with the one refusal path), until shutdown.
//!
//! A service whose consuming is its own (the executor's fair queue, the auditor's ordered
//! appends) uses the parts: [`Runner::start`], [`Runner::records`], [`Runner::deliveries`],
//! [`Runner::stop`], and [`Delivery::settle`] for each delivery.

use crate::consume::{ConsumerSpec, Delivery, DeliveryStream, Failure, Refuser};
use crate::retry::Backoff;
use crate::{BusError, ClaimError, Claims, ServiceCounters};
use airlock_protocol::roles::ServiceRole;
use async_nats::jetstream;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// What a service does with one delivery.
pub trait Handler: Send + Sync + 'static {
    type Error: Failure;

    fn handle(&self, delivery: &Delivery) -> impl Future<Output = Handled<Self::Error>> + Send;
}

/// Work that goes on while the runner hands out the next deliveries.
pub type Later<E> = Pin<Box<dyn Future<Output = Result<(), E>> + Send>>;

/// How handling a delivery went.
pub enum Handled<E> {
    /// Done: settle the delivery with this.
    Done(Result<(), E>),
    /// It waits on something slow (another service's answer): the runner goes on with the next
    /// deliveries and settles this one when the work ends. The work keeps its delivery alive
    /// ([`Delivery::keep_alive`]) while it waits.
    Later(Later<E>),
}

impl<E> From<Result<(), E>> for Handled<E> {
    fn from(outcome: Result<(), E>) -> Self {
        Handled::Done(outcome)
    }
}

/// How a failed delivery is settled.
#[derive(Clone)]
pub enum Settling {
    /// Retried with backoff; set aside (dead letter, refusal, terminal event) when the failure
    /// is permanent or repeats ([`Delivery::settle`]).
    SetAside(Box<Refuser>),
    /// Retried until it passes, never set aside: for a service that may publish no refusal (the
    /// chat bridge), whose handling fails only while NATS is away.
    RetryUntilDone,
}

impl Settling {
    pub fn set_aside(refuser: Refuser) -> Self {
        Settling::SetAside(Box::new(refuser))
    }
}

/// A running service: its role, connection, counters, shutdown and service API.
pub struct Runner {
    role: &'static ServiceRole,
    client: async_nats::Client,
    js: jetstream::Context,
    counters: ServiceCounters,
    shutdown: CancellationToken,
    /// Taken when stopped; dropping the runner stops it too, so that an early return stops
    /// answering for a service that is not running.
    api: Option<async_nats::service::Service>,
}

impl Runner {
    /// Registers the service on the NATS service API (`$SRV.*`) and its status endpoint, which
    /// answer with `counters` until [`Runner::stop`].
    pub async fn start(
        role: &'static ServiceRole,
        client: async_nats::Client,
        counters: ServiceCounters,
        shutdown: CancellationToken,
    ) -> Result<Self, BusError> {
        let api = crate::start_service(&client, role, counters.clone()).await?;
        Ok(Self {
            role,
            js: jetstream::new(client.clone()),
            client,
            counters,
            shutdown,
            api: Some(api),
        })
    }

    pub fn role(&self) -> &'static ServiceRole {
        self.role
    }

    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    pub fn jetstream(&self) -> &jetstream::Context {
        &self.js
    }

    pub fn counters(&self) -> &ServiceCounters {
        &self.counters
    }

    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// An endpoint of the service besides the service API (one of its row's `endpoints`).
    pub async fn endpoint(&self, subject: &str) -> Result<async_nats::service::endpoint::Endpoint, BusError> {
        let api = self
            .api
            .as_ref()
            .ok_or_else(|| BusError::Service("the service is stopped".into()))?;
        api.endpoint(subject).await.map_err(BusError::Service)
    }

    /// The service's key-value bucket of durable state, waiting while it is not there yet; `None`
    /// when shut down first, or when the row names no bucket.
    pub async fn records(&self) -> Result<Option<Claims>, ClaimError> {
        let Some(bucket) = self.role.bucket else {
            return Ok(None);
        };
        match Claims::open(&self.js, bucket, &self.shutdown).await {
            Ok(claims) => Ok(Some(claims)),
            Err(_) if self.shutdown.is_cancelled() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The consumer the row gives the service, on the events stream.
    pub fn consumer(&self, ack_wait: Duration, max_ack_pending: i64) -> ConsumerSpec {
        ConsumerSpec::for_role(self.role, ack_wait, max_ack_pending)
    }

    /// The deliveries of `spec`, waiting while the stream is not there or NATS is away; `None`
    /// when shut down first.
    pub async fn deliveries(&self, spec: ConsumerSpec) -> Result<Option<DeliveryStream>, BusError> {
        DeliveryStream::open(self.js.clone(), spec, self.shutdown.clone()).await
    }

    /// Consumes `spec` with `handler` until shutdown (the delivery in hand is finished first),
    /// then stops the service. Work handed back as [`Handled::Later`] that has not ended by then
    /// is dropped unsettled: the next instance gets its deliveries again.
    pub async fn serve<H: Handler>(self, spec: ConsumerSpec, handler: &H, settling: Settling) -> Result<(), BusError> {
        let Some(mut deliveries) = self.deliveries(spec).await? else {
            return Ok(());
        };
        let mut later = tokio::task::JoinSet::new();
        while let Some(delivery) = deliveries.next().await {
            let span = delivery.span(self.role.name);
            match handler.handle(&delivery).instrument(span.clone()).await {
                Handled::Done(outcome) => {
                    if !settle(&delivery, outcome, &settling, &self.shutdown).await {
                        break;
                    }
                }
                Handled::Later(work) => {
                    let (settling, shutdown) = (settling.clone(), self.shutdown.clone());
                    later.spawn(
                        async move {
                            let outcome = work.await;
                            settle(&delivery, outcome, &settling, &shutdown).await;
                        }
                        .instrument(span),
                    );
                }
            }
            while later.try_join_next().is_some() {}
        }
        later.abort_all();
        self.stop().await;
        Ok(())
    }

    /// Stops answering on the service API.
    pub async fn stop(mut self) {
        if let Some(api) = self.api.take() {
            let _ = api.stop().await;
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(api) = self.api.take() {
            // Stopping signals the service's task and aborts it: it never waits.
            let _ = futures::FutureExt::now_or_never(api.stop());
        }
    }
}

/// Settles a delivery by how its handling went; false when the consuming should stop.
async fn settle<E: Failure>(
    delivery: &Delivery,
    outcome: Result<(), E>,
    settling: &Settling,
    shutdown: &CancellationToken,
) -> bool {
    match settling {
        Settling::SetAside(refuser) => delivery.settle(outcome, refuser, shutdown).await,
        Settling::RetryUntilDone => {
            match outcome {
                Ok(()) => delivery.ack().await,
                Err(e) => {
                    let (_, delivered) = delivery.position();
                    let delay = Backoff::OUTAGE
                        .delay(u32::try_from(delivered).unwrap_or(1))
                        .max(Duration::from_millis(500));
                    tracing::warn!(error = %crate::error_text(&e), delivered, "handling failed; redelivery in {delay:?}");
                    delivery.retry_after(delay).await;
                }
            }
            true
        }
    }
}
