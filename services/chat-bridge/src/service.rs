//! The bridge's loop: consume override requests and terminal events (its durable consumer),
//! track each request in the bucket, and let the outbox and each chat's reader do the rest.
//!
//! Nothing a chat does can stop the loop: chats are reached from other tasks, with backoff, and
//! the consumer only touches NATS. The bridge publishes nothing but answers; a message it cannot
//! read is logged and acknowledged (it could only come from the gate or the executor, whose
//! users alone may publish these kinds).

use crate::answers::Core;
use crate::config::Config;
use crate::outbox::Outbox;
use crate::relay::Relay;
use crate::render::Ended;
use crate::state::{RanAgain, Store, Tracked};
use airlock_bus::runner::{Handled, Handler, Runner, Settling};
use airlock_bus::{BusError, ClaimError, Delivery, Publisher, ServiceCounters};
use airlock_protocol::roles;
use airlock_protocol::{Event, KeyError, Producer, SigningKey, now_ms};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("the bridge's signing key")]
    Key(#[from] KeyError),
    #[error("[people]")]
    People(#[from] airlock_approvals::PeopleError),
    #[error("the bridge's records")]
    Claims(#[from] ClaimError),
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error(transparent)]
    Chat(#[from] crate::adapter::ChatError),
    #[error("listening for interactions on {addr}")]
    Listen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

pub async fn run(client: async_nats::Client, config: Config, shutdown: CancellationToken) -> Result<(), BridgeError> {
    let key = SigningKey::load_or_generate(&config.key_file, &config.key_name)?;
    tracing::info!(key = %key.verifier(), "chat bridge signing answers (list this key in [gate.bridge_keys])");
    let counters = ServiceCounters::default();
    let runner = Runner::start(&roles::CHAT_BRIDGE, client, counters.clone(), shutdown.clone()).await?;
    let Some(claims) = runner.records().await? else {
        return Ok(());
    };
    let publisher = Publisher::new(runner.jetstream().clone(), Producer::ChatBridge, shutdown.clone());
    let mut core = Core::new(
        Store::new(claims),
        Relay::new(key.clone(), publisher, counters.clone()),
        counters.clone(),
        airlock_approvals::People::new(&config.people, &Default::default())?,
    );
    core.public_url = config.public_url.clone();
    let core = Arc::new(core);

    let chats = crate::chats::start(&config, &key, core.clone(), shutdown.clone()).await?;
    tokio::spawn(Outbox::new(core.clone(), chats).run(shutdown.clone()));

    let spec = runner.consumer(Duration::from_secs(30), 64).unbounded_redelivery();
    // Only NATS being away fails a delivery here: it is tried again later, never set aside
    // (setting aside would mean publishing a refusal, which the bridge may not).
    runner.serve(spec, &*core, Settling::RetryUntilDone).await?;
    Ok(())
}

impl Handler for Core {
    type Error = ClaimError;

    async fn handle(&self, delivery: &Delivery) -> Handled<ClaimError> {
        track(self, delivery).await.into()
    }
}

/// Records an override request, or the end of one, in the bucket.
async fn track(core: &Core, delivery: &Delivery) -> Result<(), ClaimError> {
    let envelope = match delivery.envelope() {
        Ok(e) => e,
        Err(e) => {
            core.counters.incr("unreadable");
            tracing::error!(error = %airlock_bus::error_text(&e), subject = delivery.subject(), "unreadable message; skipped");
            return Ok(());
        }
    };
    let rid = envelope.request_id.clone();
    match envelope.event {
        Event::OverrideAsked(asked) => {
            let fresh = asked.deadline_ms > now_ms();
            let tracked = Tracked::new(rid.clone(), asked);
            if core.store.track(&tracked).await? {
                core.counters
                    .incr(if fresh { "requests" } else { "requests_past_deadline" });
                tracing::info!(request_id = %rid, fresh, "override request tracked");
            }
            match core.store.tracked(&rid).await? {
                Some(current) => core.note(&current),
                None => core.note(&tracked),
            }
        }
        Event::Observed(observed) => {
            let seen = airlock_protocol::text::clip(&observed.summary(), 400);
            core.update(&rid, |t| {
                t.observed = Some(seen.clone());
                if let Some(ended) = &mut t.ended {
                    ended.observed = Some(seen.clone());
                }
            })
            .await?;
        }
        Event::Terminal(terminal) => {
            let ended = Ended::of(&terminal);
            let updated = core
                .update(&rid, |t| {
                    if t.ended.is_none() {
                        let mut ended = ended.clone();
                        ended.observed = t.observed.clone();
                        t.ended = Some(ended);
                    }
                })
                .await?;
            if updated.is_some() {
                core.counters.incr("requests_ended");
            } else if let Some(ran) = RanAgain::of(&rid, &terminal) {
                // Decided by an approval given earlier in a chat: said there, once.
                if core.store.track_ran_again(&ran).await? {
                    core.counters.incr("ran_again");
                }
                core.wake_for(&rid);
            }
        }
        _ => {}
    }
    Ok(())
}
