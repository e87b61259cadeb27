//! Admission of submissions per client: a token bucket for the rate, a set of requests in
//! flight for the concurrency. Pure bookkeeping, no I/O: the service feeds it submissions as
//! they arrive and terminal events as they pass.
//!
//! Why here: every request enters through the assessor, and the client is known from the
//! subject (the server's permissions vouch for it). A client over its limits is refused at once
//! — refusing costs a few hundred microseconds — so a flood drains fast and another client's
//! request waits behind at most the flooder's requests in flight, not its whole backlog.

use airlock_bus::ClientsConfig;
use airlock_protocol::{RefusalReason, RequestId};
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Client {
    tokens: f64,
    refilled: Instant,
    in_flight: HashMap<RequestId, Instant>,
}

/// Why a submission is not admitted.
#[derive(Debug, PartialEq)]
pub struct Refused {
    pub reason: RefusalReason,
    pub detail: String,
}

#[derive(Debug)]
pub struct Intake {
    limits: ClientsConfig,
    clients: HashMap<String, Client>,
}

impl Intake {
    pub fn new(limits: ClientsConfig) -> Self {
        Self {
            limits,
            clients: HashMap::new(),
        }
    }

    /// Admits `request` of `client` at `now`, or says why not. An admitted request counts in
    /// flight until [`Intake::finished`] or its expiry.
    pub fn admit(&mut self, client: &str, request: &RequestId, now: Instant) -> Result<(), Refused> {
        let burst = f64::from(self.limits.burst);
        let entry = self.clients.entry(client.to_owned()).or_insert_with(|| Client {
            tokens: burst,
            refilled: now,
            in_flight: HashMap::new(),
        });
        let elapsed = now.saturating_duration_since(entry.refilled).as_secs_f64();
        entry.tokens = (entry.tokens + elapsed * self.limits.rate_per_second).min(burst);
        entry.refilled = now;
        let expiry = self.limits.in_flight_expiry;
        entry
            .in_flight
            .retain(|_, since| now.saturating_duration_since(*since) < expiry);
        if entry.tokens < 1.0 {
            return Err(Refused {
                reason: RefusalReason::RateLimited,
                detail: format!(
                    "client {client} submits faster than its limit of {} per second (burst {})",
                    self.limits.rate_per_second, self.limits.burst
                ),
            });
        }
        let limit = self.limits.max_in_flight as usize;
        if entry.in_flight.len() >= limit && !entry.in_flight.contains_key(request) {
            return Err(Refused {
                reason: RefusalReason::TooManyInFlight,
                detail: format!("client {client} already has {limit} requests in flight (its limit)"),
            });
        }
        entry.tokens -= 1.0;
        entry.in_flight.insert(request.clone(), now);
        Ok(())
    }

    /// A request ended: it counts in flight no more.
    pub fn finished(&mut self, request: &RequestId) {
        for client in self.clients.values_mut() {
            if client.in_flight.remove(request).is_some() {
                return;
            }
        }
    }

    /// Requests counted in flight for `client`.
    pub fn in_flight(&self, client: &str) -> usize {
        self.clients.get(client).map_or(0, |c| c.in_flight.len())
    }

    /// Forgets idle clients (no request in flight, bucket full again), so that the map stays
    /// as small as the set of active clients.
    pub fn forget_idle(&mut self, now: Instant) {
        let burst = f64::from(self.limits.burst);
        let rate = self.limits.rate_per_second;
        self.clients.retain(|_, c| {
            let refill = now.saturating_duration_since(c.refilled).as_secs_f64() * rate;
            !c.in_flight.is_empty() || c.tokens + refill < burst
        });
    }
}

/// How often the service forgets idle clients.
pub const FORGET_EVERY: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(rate: f64, burst: u32, in_flight: u32) -> ClientsConfig {
        ClientsConfig {
            rate_per_second: rate,
            burst,
            max_in_flight: in_flight,
            ..ClientsConfig::default()
        }
    }

    fn rid(n: u32) -> RequestId {
        RequestId::parse(&format!("r{n}")).unwrap()
    }

    #[test]
    fn a_burst_then_the_rate() {
        let mut intake = Intake::new(limits(2.0, 3, 100));
        let t0 = Instant::now();
        for n in 0..3 {
            assert_eq!(intake.admit("mai", &rid(n), t0), Ok(()));
        }
        let refused = intake.admit("mai", &rid(3), t0).unwrap_err();
        assert_eq!(refused.reason, RefusalReason::RateLimited);
        // Half a second at 2 per second gives one more.
        assert_eq!(intake.admit("mai", &rid(4), t0 + Duration::from_millis(500)), Ok(()));
        assert!(intake.admit("mai", &rid(5), t0 + Duration::from_millis(500)).is_err());
    }

    #[test]
    fn clients_are_limited_apart() {
        let mut intake = Intake::new(limits(1.0, 1, 100));
        let t0 = Instant::now();
        assert!(intake.admit("mai", &rid(0), t0).is_ok());
        assert!(intake.admit("mai", &rid(1), t0).is_err());
        assert!(intake.admit("batch", &rid(2), t0).is_ok());
    }

    #[test]
    fn requests_in_flight_are_bounded_until_they_end_or_expire() {
        let mut intake = Intake::new(limits(1000.0, 1000, 2));
        let t0 = Instant::now();
        assert!(intake.admit("mai", &rid(0), t0).is_ok());
        assert!(intake.admit("mai", &rid(1), t0).is_ok());
        assert_eq!(
            intake.admit("mai", &rid(2), t0).unwrap_err().reason,
            RefusalReason::TooManyInFlight
        );
        intake.finished(&rid(0));
        assert_eq!(intake.in_flight("mai"), 1);
        assert!(intake.admit("mai", &rid(2), t0).is_ok());
        let later = t0 + ClientsConfig::default().in_flight_expiry + Duration::from_secs(1);
        assert!(intake.admit("mai", &rid(3), later).is_ok());
        assert_eq!(intake.in_flight("mai"), 1);
    }

    #[test]
    fn idle_clients_are_forgotten() {
        let mut intake = Intake::new(limits(10.0, 2, 10));
        let t0 = Instant::now();
        assert!(intake.admit("mai", &rid(0), t0).is_ok());
        intake.forget_idle(t0 + Duration::from_secs(10));
        assert_eq!(intake.clients.len(), 1, "a request is still in flight");
        intake.finished(&rid(0));
        intake.forget_idle(t0 + Duration::from_secs(10));
        assert!(intake.clients.is_empty());
    }
}
