//! The `[telemetry]` section of `airlock.toml`: where each service serves its Prometheus
//! metrics. OTLP export is configured by the standard `OTEL_*` environment variables instead
//! (see [`crate::export`]), so that the usual collector set-up works unchanged.

use serde::Deserialize;
use std::collections::BTreeMap;

/// Listen address meaning "no metrics endpoint".
pub const OFF: &str = "off";

/// Default listen address: loopback, a free port chosen by the system. Several stacks on one
/// machine never collide; the port is announced in the NATS service API (`airlock status`) and
/// in a Prometheus file-discovery target file.
pub const DEFAULT_METRICS_LISTEN: &str = "127.0.0.1:0";

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct TelemetrySettings {
    /// Where every service serves `GET /metrics` (`host:port`; port 0 picks a free one), or
    /// `"off"`.
    pub metrics_listen: String,
    /// One service's own address instead, by its config section (`assessor`, `gate`,
    /// `executor`, `auditor`), e.g. a fixed port for a static Prometheus config.
    pub metrics_listen_for: BTreeMap<String, String>,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            metrics_listen: DEFAULT_METRICS_LISTEN.to_owned(),
            metrics_listen_for: BTreeMap::new(),
        }
    }
}

impl TelemetrySettings {
    /// Checks every address and that each per-service key names one of `sections`; the error
    /// names the key.
    pub fn validate(&self, sections: &[&str]) -> Result<(), (String, String)> {
        check_listen(&self.metrics_listen).map_err(|reason| ("telemetry.metrics_listen".to_owned(), reason))?;
        for (section, listen) in &self.metrics_listen_for {
            let key = format!("telemetry.metrics_listen_for.{section}");
            if !sections.contains(&section.as_str()) {
                return Err((
                    key,
                    format!(
                        "no service has the section [{section}] (one of: {})",
                        sections.join(", ")
                    ),
                ));
            }
            check_listen(listen).map_err(|reason| (key, reason))?;
        }
        Ok(())
    }

    /// The address the service with config section `section` listens on; `None` when off.
    pub fn metrics_listen(&self, section: &str) -> Option<String> {
        let listen = self.metrics_listen_for.get(section).unwrap_or(&self.metrics_listen);
        (listen != OFF && !listen.is_empty()).then(|| listen.clone())
    }
}

fn check_listen(listen: &str) -> Result<(), String> {
    if listen == OFF || listen.is_empty() {
        return Ok(());
    }
    listen
        .parse::<std::net::SocketAddr>()
        .map(|_| ())
        .map_err(|e| format!("{listen:?} is not host:port with a numeric IP address, nor \"off\" ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTIONS: [&str; 4] = ["assessor", "gate", "executor", "auditor"];

    fn parse(text: &str) -> TelemetrySettings {
        toml::from_str(text).expect("parses")
    }

    #[test]
    fn every_service_gets_a_free_loopback_port_by_default() {
        let settings = TelemetrySettings::default();
        assert!(settings.validate(&SECTIONS).is_ok());
        for section in SECTIONS {
            assert_eq!(settings.metrics_listen(section).as_deref(), Some("127.0.0.1:0"));
        }
    }

    #[test]
    fn one_service_can_have_its_own_address_or_none() {
        let settings = parse("metrics_listen = \"off\"\n[metrics_listen_for]\nexecutor = \"127.0.0.1:9464\"\n");
        assert!(settings.validate(&SECTIONS).is_ok());
        assert_eq!(settings.metrics_listen("executor").as_deref(), Some("127.0.0.1:9464"));
        assert_eq!(settings.metrics_listen("gate"), None);
    }

    #[test]
    fn bad_addresses_and_unknown_services_name_their_key() {
        let (key, _) = parse("metrics_listen = \"localhost:9464\"\n")
            .validate(&SECTIONS)
            .unwrap_err();
        assert_eq!(key, "telemetry.metrics_listen");
        let (key, reason) = parse("[metrics_listen_for]\nexecuter = \"127.0.0.1:1\"\n")
            .validate(&SECTIONS)
            .unwrap_err();
        assert_eq!(key, "telemetry.metrics_listen_for.executer");
        assert!(reason.contains("executor"), "{reason}");
    }
}
