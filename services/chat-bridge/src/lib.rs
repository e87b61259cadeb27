//! The chat bridge: carries override requests to the chats humans already use (Matrix, Slack,
//! Discord, signed webhooks) and their answers back to the gate. It decides nothing and signs
//! nothing but its own relays: the gate checks every answer against its policy.
//!
//! Reading order: [`config`], [`service`] (the consume loop), [`outbox`] (posting and editing),
//! [`answers`] (what happens to an answer), [`routing`] (which request a typed id names),
//! [`command`] (reading what humans type), [`render`] (what they see), [`relay`] (signing answers for the gate), [`state`] (the bucket), then one
//! module per chat system behind the [`adapter::Adapter`] trait, and [`signatures`].

pub mod adapter;
pub mod answers;
pub mod chats;
pub mod code_page;
pub mod command;
pub mod config;
pub mod discord;
pub mod http;
pub mod interaction;
pub mod matrix;
pub mod outbox;
pub mod relay;
pub mod render;
pub mod routing;
pub mod service;
pub mod signatures;
pub mod slack;
pub mod state;
pub mod webhook;
pub mod wiring;

pub use config::Config;
pub use service::{BridgeError, run};

/// A short, stable id derived from `parts`, for transaction ids and keys.
pub fn txn_id(parts: &[&str]) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..12])
}
