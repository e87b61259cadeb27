//! The stack's clients: who may submit (each its own NATS user), and how much.
//!
//! The `[clients]` section of `airlock.toml`. `airlock up` creates a NATS user with Mai's rights
//! for each name; the assessor holds each client to its rate and its number of requests in
//! flight, so one flooding client is refused quickly and another's request is still served.

use airlock_protocol::roles;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientsConfig {
    /// Client users besides `mai`, each with Mai's rights under its own name
    /// (`airlock.submit.<name>.*`, credentials in `creds/<name>.nk`).
    pub extra_users: Vec<String>,
    /// Submissions per second each client may sustain.
    pub rate_per_second: f64,
    /// Submissions a client may send at once after being idle.
    pub burst: u32,
    /// Requests of one client between acceptance and their terminal event.
    pub max_in_flight: u32,
    /// A request counted in flight this long is counted no more (its terminal event was missed
    /// while disconnected, or it waits for a human far longer than usual).
    #[serde(with = "humantime_serde")]
    pub in_flight_expiry: Duration,
}

impl Default for ClientsConfig {
    fn default() -> Self {
        Self {
            extra_users: Vec::new(),
            rate_per_second: 20.0,
            burst: 40,
            max_in_flight: 32,
            in_flight_expiry: Duration::from_secs(30 * 60),
        }
    }
}

impl ClientsConfig {
    /// Every client user: `mai` first.
    pub fn users(&self) -> Vec<String> {
        let mut users = vec![roles::MAI.user.to_owned()];
        for user in &self.extra_users {
            if !users.contains(user) {
                users.push(user.clone());
            }
        }
        users
    }

    /// Checks what serde cannot: names that are NATS tokens and not another role's, limits that
    /// admit at least one request.
    pub fn validate(&self) -> Result<(), String> {
        for user in &self.extra_users {
            if !roles::valid_client_name(user) {
                return Err(format!(
                    "extra_users: {user:?} is not a client name (lower-case letters, digits, - and _, at most 32)"
                ));
            }
            if roles::by_user(user).is_some() {
                return Err(format!("extra_users: {user:?} is the name of a built-in role"));
            }
        }
        if !(self.rate_per_second.is_finite() && self.rate_per_second > 0.0) {
            return Err("rate_per_second must be a positive number".into());
        }
        if self.burst == 0 {
            return Err("burst must be at least 1".into());
        }
        if self.max_in_flight == 0 {
            return Err("max_in_flight must be at least 1".into());
        }
        Ok(())
    }
}
