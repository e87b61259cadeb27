//! The assessor: rates code LOW / MEDIUM / HIGH / BLOCKED before anything runs.
//!
//! Code is parsed (Python by ruff's parser, bash by `shell::syntax`), reduced to a small model of facts (calls
//! with resolved names and argument values, imports, bindings, strings, data-flow labels), and
//! matched against rules that are data (TOML files in `rules/`), plus the operators' threat list
//! (`threats/threats.toml`). [`Engine::assess`] rates one program; [`SharedEngine`] reloads
//! rules and threats without a restart.

pub mod engine;
#[cfg(feature = "service")]
pub mod intake;
pub mod rules;
#[cfg(feature = "service")]
pub mod service;
pub mod shared;

mod budget;
mod builtin;
mod context;
mod destinations;
mod effects;
mod error;
mod extract;
mod facts;
mod input;
mod matcher;
mod python;
mod scripts;
mod shell;
mod summary;
mod threats;
mod treesitter;
mod trojan;
mod values;

pub use engine::{Engine, EngineConfig, EngineError, RegexError, Thresholds};
pub use shared::{RuleWatcher, SharedEngine};
