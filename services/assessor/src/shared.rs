//! A reloadable engine for the service: readers take the current engine without locking, a
//! reload swaps in a new one, and a failed reload leaves the old one in place.

use crate::engine::{Engine, EngineConfig, EngineError};
use arc_swap::ArcSwap;
use notify::{RecursiveMode, Watcher};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

/// Editors write a file in several steps; changes this close together make one reload.
const SETTLE: Duration = Duration::from_millis(300);

pub struct SharedEngine {
    config: EngineConfig,
    current: ArcSwap<Engine>,
}

impl SharedEngine {
    pub fn new(config: EngineConfig) -> Result<SharedEngine, EngineError> {
        let engine = Engine::load(&config)?;
        Ok(SharedEngine {
            config,
            current: ArcSwap::from_pointee(engine),
        })
    }

    /// The engine to assess with; holding it does not block a reload.
    pub fn current(&self) -> Arc<Engine> {
        self.current.load_full()
    }

    /// Loads rules and threats again. On error the engine in use stays as it was.
    pub fn reload(&self) -> Result<Arc<Engine>, EngineError> {
        match Engine::load(&self.config) {
            Ok(engine) => {
                let engine = Arc::new(engine);
                self.current.store(Arc::clone(&engine));
                tracing::info!(
                    rules_version = engine.rules_version(),
                    threats_version = engine.threats_version(),
                    "assessor rules reloaded"
                );
                Ok(engine)
            }
            Err(error) => {
                tracing::error!(%error, "assessor reload failed; keeping the rules in use");
                Err(error)
            }
        }
    }

    /// Reloads whenever the rule directory or the threat list changes, until the returned
    /// watcher is dropped. Nothing is watched for compiled-in rules and threats.
    pub fn watch(self: &Arc<Self>) -> Result<RuleWatcher, EngineError> {
        let (events, changes) = mpsc::channel();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event
                && !event.kind.is_access()
            {
                let _ = events.send(());
            }
        })?;
        if let Some(dir) = &self.config.rules_dir {
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
        }
        if let Some(file) = &self.config.threats_file {
            // Watch the directory: editors replace files, which drops a watch on the file itself.
            let dir = file
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
        }
        let shared = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("assessor-rule-watch".into())
            .spawn(move || {
                while changes.recv().is_ok() {
                    while changes.recv_timeout(SETTLE).is_ok() {}
                    let _ = shared.reload();
                }
            })
            .map_err(|e| EngineError::Io {
                path: "assessor-rule-watch thread".into(),
                source: e,
            })?;
        Ok(RuleWatcher {
            _watcher: watcher,
            _thread: thread,
        })
    }
}

/// Stops watching when dropped (the watcher closes the channel and the thread ends).
pub struct RuleWatcher {
    _watcher: notify::RecommendedWatcher,
    _thread: std::thread::JoinHandle<()>,
}
