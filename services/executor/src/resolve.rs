//! The resolve endpoint (`airlock.executor.packages.resolve`): before the gate decides, the
//! assessor asks an executor (any one: a queue group) to resolve a request's package specs to
//! exact wheels and rate them. The executor downloads them through the egress proxy (the
//! fetches are audited under the request), keeps them by SHA-256 in its wheel store, rates every
//! file in them that can run with the assessor's engine as `external` code, and answers with one
//! [`PackageRating`] per wheel, dependencies included.
//!
//! Two caches keep this cheap: a resolution of the same specs is reused for
//! `[executor.packages] resolve_ttl` (a new release changes what a name resolves to, so never
//! for long), and a wheel's rating is kept by its digest and the rules and threat list that
//! rated it (the same bytes under the same rules rate the same).
//!
//! Every failure is an answer, typed ([`ResolveFailure`]): the assessor ends the request, and
//! nothing runs unassessed.

use crate::SandboxEvent;
use crate::error::SandboxError;
use crate::package_cache::resolution_key;
use crate::package_rating::{RatingError, RatingPolicy, rate_wheel};
use crate::sandbox::Sandbox;
use airlock_assessor::SharedEngine;
use airlock_bus::{Publisher, ServiceCounters};
use airlock_protocol::packages::{PackageRating, ResolveFailure, ResolveReply, ResolveRequest, Wheel, covers};
use airlock_protocol::request::{MAX_PACKAGES, valid_package_spec};
use airlock_protocol::{CodeDigest, Egress, Event, RequestId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest request body read.
const MAX_REQUEST_BYTES: usize = 64 * 1024;
/// Ratings remembered at most (by wheel digest); past it the oldest half is forgotten.
const MAX_RATINGS: usize = 4096;

/// Resolves and rates package sets for the assessor.
pub struct Resolver {
    sandbox: Sandbox,
    engine: Arc<SharedEngine>,
    publisher: Publisher,
    policy: RatingPolicy,
    ttl: Duration,
    resolutions: Mutex<HashMap<String, (Instant, Vec<Wheel>)>>,
    /// Each rating with the order it was made in (the oldest are forgotten first).
    ratings: Mutex<HashMap<RatingKey, (u64, PackageRating)>>,
    rated: std::sync::atomic::AtomicU64,
    slots: tokio::sync::Semaphore,
    counters: ServiceCounters,
}

/// The rating key: a wheel's bytes and the rules and threat list that read them.
type RatingKey = (CodeDigest, String, String);

impl Resolver {
    pub fn new(
        sandbox: Sandbox,
        engine: Arc<SharedEngine>,
        publisher: Publisher,
        counters: ServiceCounters,
    ) -> Resolver {
        let packages = &sandbox.config().packages;
        Resolver {
            policy: packages.rating_policy(),
            ttl: packages.resolve_ttl,
            slots: tokio::sync::Semaphore::new(packages.max_resolving.max(1)),
            sandbox,
            engine,
            publisher,
            resolutions: Mutex::new(HashMap::new()),
            ratings: Mutex::new(HashMap::new()),
            rated: std::sync::atomic::AtomicU64::new(0),
            counters,
        }
    }

    /// Answers resolve requests until the endpoint closes, each in its own task.
    pub async fn serve(self: Arc<Self>, mut endpoint: async_nats::service::endpoint::Endpoint) {
        use futures::StreamExt as _;
        while let Some(request) = endpoint.next().await {
            let resolver = self.clone();
            tokio::spawn(async move {
                let reply = resolver.answer(&request.message.payload).await;
                let body = serde_json::to_vec(&reply).unwrap_or_default();
                if let Err(e) = request.respond(Ok(body.into())).await {
                    tracing::warn!(error = %e, "a resolve reply could not be sent");
                }
            });
        }
    }

    /// One request's answer: read, checked, resolved, rated.
    pub async fn answer(&self, body: &[u8]) -> ResolveReply {
        let request = match read_request(body) {
            Ok(request) => request,
            Err(detail) => return failed(ResolveFailure::InvalidSpec, detail),
        };
        let span =
            tracing::info_span!("resolve packages", request_id = %request.request_id, specs = request.specs.len());
        let _permit = match self.slots.acquire().await {
            Ok(permit) => permit,
            Err(_) => return failed(ResolveFailure::Unavailable, "the executor is stopping".into()),
        };
        let reply = tracing::Instrument::instrument(self.resolve(&request), span).await;
        match &reply {
            ResolveReply::Resolved { packages, .. } => {
                self.counters.incr("packages_resolved");
                tracing::info!(request_id = %request.request_id, wheels = packages.len(), "packages resolved and rated");
            }
            ResolveReply::Failed { failure, detail } => {
                self.counters.incr("packages_unresolved");
                tracing::warn!(request_id = %request.request_id, %failure, detail, "packages not resolved");
            }
        }
        reply
    }

    async fn resolve(&self, request: &ResolveRequest) -> ResolveReply {
        let started = Instant::now();
        let (wheels, resolution_cached) = match self.wheels_for(request).await {
            Ok(found) => found,
            Err((failure, detail)) => return failed(failure, detail),
        };
        let engine = self.engine.current();
        let (rules_version, threats_version) = (engine.rules_version().to_owned(), engine.threats_version().to_owned());
        let mut packages = Vec::with_capacity(wheels.len());
        let mut unrated = Vec::new();
        for wheel in wheels {
            match self.remembered(&(wheel.sha256.clone(), rules_version.clone(), threats_version.clone())) {
                Some(rating) => packages.push(PackageRating { wheel, ..rating }),
                None => unrated.push(wheel),
            }
        }
        if !unrated.is_empty() {
            let store = self.sandbox.installer().store().clone();
            let policy = self.policy.clone();
            let rating_engine = engine.clone();
            let rated = tokio::task::spawn_blocking(move || {
                unrated
                    .into_iter()
                    .map(|wheel| {
                        let path = store.verified(&wheel).map_err(|e| RatingError::Unreadable {
                            file: wheel.file.clone(),
                            source: e.into(),
                        })?;
                        rate_wheel(&rating_engine, &policy, &wheel, &path)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .await;
            let rated = match rated {
                Ok(Ok(rated)) => rated,
                Ok(Err(error @ RatingError::TooLarge { .. })) => {
                    return failed(ResolveFailure::TooLarge, error.to_string());
                }
                Ok(Err(error)) => return failed(ResolveFailure::Internal, airlock_protocol::error_chain(&error)),
                Err(error) => return failed(ResolveFailure::Internal, format!("rating wheels: {error}")),
            };
            for rating in rated {
                self.remember(
                    (
                        rating.wheel.sha256.clone(),
                        rules_version.clone(),
                        threats_version.clone(),
                    ),
                    &rating,
                );
                packages.push(rating);
            }
        }
        packages.sort_by(|a, b| a.wheel.cmp(&b.wheel));
        if let Err(detail) = covers(&request.specs, &packages) {
            return failed(ResolveFailure::Internal, detail);
        }
        ResolveReply::Resolved {
            packages,
            rules_version,
            threats_version,
            resolution_cached,
            elapsed_ms: started.elapsed().as_millis() as u64,
        }
    }

    /// The wheels `request`'s specs resolve to: a resolution younger than the time to live whose
    /// wheels are all still in the store, or a fresh download.
    async fn wheels_for(&self, request: &ResolveRequest) -> Result<(Vec<Wheel>, bool), (ResolveFailure, String)> {
        let installer = self.sandbox.installer();
        let image = self.sandbox.config().images.python.clone();
        let image_id = installer
            .image_id(&image)
            .await
            .map_err(|e| (ResolveFailure::Internal, airlock_bus::error_text(&e)))?;
        let key = resolution_key(self.sandbox.config(), &image_id, &request.specs);
        let reused = {
            let mut resolutions = self.resolutions.lock().unwrap_or_else(|p| p.into_inner());
            resolutions.retain(|_, (at, _)| at.elapsed() < self.ttl);
            resolutions.get(&key).map(|(_, wheels)| wheels.clone())
        };
        if let Some(wheels) = reused.filter(|w| w.iter().all(|w| installer.store().has(w))) {
            self.counters.incr("resolutions_reused");
            return Ok((wheels, true));
        }
        let (events, records) = self.audit_egress(request.request_id.clone());
        let downloaded = installer
            .download(request.request_id.as_str(), &image, &request.specs, events)
            .await;
        let records = records.await.unwrap_or_default();
        let wheels = downloaded.map_err(|error| classify(&error, &records))?;
        if wheels.len() > airlock_protocol::packages::MAX_WHEELS {
            return Err((
                ResolveFailure::TooLarge,
                format!(
                    "the specs resolve to {} wheels; at most {} are accepted",
                    wheels.len(),
                    airlock_protocol::packages::MAX_WHEELS
                ),
            ));
        }
        self.resolutions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, (Instant::now(), wheels.clone()));
        Ok((wheels, false))
    }

    /// A sender for the proxy's records: each is published under the request (the audit log
    /// holds every fetch made for it) and kept for telling why a download failed.
    fn audit_egress(
        &self,
        rid: RequestId,
    ) -> (
        tokio::sync::mpsc::UnboundedSender<SandboxEvent>,
        tokio::task::JoinHandle<Vec<Egress>>,
    ) {
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<SandboxEvent>();
        let publisher = self.publisher.clone();
        let forward = tokio::spawn(async move {
            let mut records = Vec::new();
            while let Some(event) = receiver.recv().await {
                if let SandboxEvent::Egress(egress) = event {
                    if let Err(e) = publisher.emit(&rid, Event::Egress(egress.clone())).await {
                        tracing::warn!(error = %airlock_bus::error_text(&e), "a package fetch was not published");
                    }
                    records.push(egress);
                }
            }
            records
        });
        (sender, forward)
    }

    fn remembered(&self, key: &RatingKey) -> Option<PackageRating> {
        let ratings = self.ratings.lock().unwrap_or_else(|p| p.into_inner());
        ratings.get(key).map(|(_, rating)| rating.clone())
    }

    fn remember(&self, key: RatingKey, rating: &PackageRating) {
        let order = self.rated.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut ratings = self.ratings.lock().unwrap_or_else(|p| p.into_inner());
        if ratings.len() >= MAX_RATINGS {
            let cut = order.saturating_sub(MAX_RATINGS as u64 / 2);
            ratings.retain(|_, (at, _)| *at >= cut);
        }
        ratings.insert(key, (order, rating.clone()));
    }
}

fn failed(failure: ResolveFailure, detail: String) -> ResolveReply {
    ResolveReply::Failed {
        failure,
        detail: airlock_protocol::text::clip(&detail, 900),
    }
}

fn read_request(body: &[u8]) -> Result<ResolveRequest, String> {
    if body.len() > MAX_REQUEST_BYTES {
        return Err(format!(
            "the request is {} bytes; at most {MAX_REQUEST_BYTES}",
            body.len()
        ));
    }
    let request: ResolveRequest =
        serde_json::from_slice(body).map_err(|e| format!("the request is not a resolve request: {e}"))?;
    if request.specs.is_empty() || request.specs.len() > MAX_PACKAGES {
        return Err(format!(
            "{} specs; between 1 and {MAX_PACKAGES} are accepted",
            request.specs.len()
        ));
    }
    if let Some(bad) = request.specs.iter().find(|s| !valid_package_spec(s)) {
        return Err(format!(
            "package spec {:?} is not NAME or NAME==VERSION",
            airlock_protocol::text::clip(bad, 120)
        ));
    }
    Ok(request)
}

/// Why a download failed, from pip's account and the proxy's records of what was fetched.
pub fn classify(error: &SandboxError, records: &[Egress]) -> (ResolveFailure, String) {
    let detail = airlock_bus::error_text(error);
    if let Some(refused) = records.iter().find(|r| !r.allowed) {
        return (
            ResolveFailure::EgressRefused,
            format!(
                "the egress proxy refused a fetch from {} ({}): {detail}",
                refused.host,
                refused.reason.as_deref().unwrap_or("not allowed")
            ),
        );
    }
    let SandboxError::Packages { detail: pip } = error else {
        return (ResolveFailure::Internal, detail);
    };
    if pip.contains("exceed") {
        return (ResolveFailure::TooLarge, detail);
    }
    if pip.contains("took longer than") {
        return (ResolveFailure::Timeout, detail);
    }
    let unreachable = records.iter().any(|r| r.status.is_none_or(|s| s >= 500));
    let not_found = records.iter().any(|r| r.status == Some(404));
    if pip.contains("No matching distribution") || pip.contains("Could not find a version") {
        if unreachable {
            return (ResolveFailure::IndexUnreachable, detail);
        }
        if not_found {
            return (ResolveFailure::UnknownPackage, detail);
        }
        return (ResolveFailure::NoWheel, detail);
    }
    if unreachable {
        return (ResolveFailure::IndexUnreachable, detail);
    }
    (ResolveFailure::Internal, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(url: &str, allowed: bool, status: Option<u16>) -> Egress {
        Egress {
            method: "GET".into(),
            host: "index.test".into(),
            url: url.into(),
            allowed,
            status,
            bytes: 0,
            reason: None,
        }
    }

    fn pip(text: &str) -> SandboxError {
        SandboxError::Packages {
            detail: format!("pip exited with 1: {text}"),
        }
    }

    #[test]
    fn failures_are_told_apart_by_what_was_fetched() {
        let none = "ERROR: No matching distribution found for x";
        let cases = [
            (
                pip(none),
                vec![record("/simple/x/", true, Some(404))],
                ResolveFailure::UnknownPackage,
            ),
            (
                pip(none),
                vec![record("/simple/x/", true, Some(200))],
                ResolveFailure::NoWheel,
            ),
            (
                pip(none),
                vec![record("/simple/x/", true, None)],
                ResolveFailure::IndexUnreachable,
            ),
            (
                pip("HTTP error 403"),
                vec![record("/f.whl", false, Some(403))],
                ResolveFailure::EgressRefused,
            ),
            (
                SandboxError::Packages {
                    detail: "the installed packages exceed 10 bytes".into(),
                },
                vec![],
                ResolveFailure::TooLarge,
            ),
            (
                SandboxError::Packages {
                    detail: "the install took longer than 5 ms".into(),
                },
                vec![],
                ResolveFailure::Timeout,
            ),
            (SandboxError::Internal("boom".into()), vec![], ResolveFailure::Internal),
        ];
        for (error, records, expected) in cases {
            assert_eq!(classify(&error, &records).0, expected, "{error}");
        }
    }

    #[test]
    fn requests_are_checked_before_anything_is_fetched() {
        let ok = br#"{"request_id":"mai.r1","specs":["six==1.16.0"]}"#;
        assert!(read_request(ok).is_ok());
        for bad in [
            &br#"{"request_id":"mai.r1","specs":["--index-url=http://evil"]}"#[..],
            br#"{"request_id":"mai.r1","specs":[]}"#,
            br#"{"request_id":"a.b.c","specs":["six"]}"#,
            b"not json",
        ] {
            assert!(read_request(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
