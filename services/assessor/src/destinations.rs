//! Where a program connects: the kinds of address malware uses to fetch its next stage or send
//! what it took (URL shorteners, paste and file-drop sites, chat webhooks and bot APIs, dynamic
//! DNS, tunnels and request catchers, listed by the operators in `threats.toml` as `[[shady]]`),
//! and addresses written as raw or encoded IP numbers.

use airlock_protocol::assessment::Level;
use serde::Deserialize;

/// One `[[shady]]` entry of the threat list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShadySpec {
    /// What kind of place this is, for the explanation ("URL shortener").
    pub category: String,
    /// Host names (matching the host and its subdomains), or host and path prefixes
    /// (`discord.com/api/webhooks`).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The finding's level: `HIGH` (the default) or `MEDIUM`.
    #[serde(default = "high")]
    pub level: Level,
}

fn high() -> Level {
    Level::High
}

/// A destination that is one of these kinds of address.
#[derive(Debug, Clone, PartialEq)]
pub struct DestinationHit {
    /// The host (and path prefix) that matched, or the address.
    pub address: String,
    pub category: String,
    pub level: Level,
}

#[derive(Debug, Default)]
pub struct Destinations {
    /// Host entries, by host, to the index of their spec: a host and each of its parent domains
    /// are looked up (a handful of lookups, whatever the length of the list).
    hosts: std::collections::HashMap<String, usize>,
    /// Entries with a path (`discord.com/api/webhooks`), matched as prefixes.
    prefixes: Vec<(String, usize)>,
    specs: Vec<ShadySpec>,
}

impl Destinations {
    pub fn new(specs: Vec<ShadySpec>) -> Result<Destinations, String> {
        let mut hosts = std::collections::HashMap::new();
        let mut prefixes = Vec::new();
        for (index, spec) in specs.iter().enumerate() {
            if !matches!(spec.level, Level::Medium | Level::High) {
                return Err(format!("shady {:?}: level is MEDIUM or HIGH", spec.category));
            }
            for host in &spec.hosts {
                let host = host.trim().trim_start_matches('.').to_ascii_lowercase();
                if host.len() < 4 || !host.contains('.') {
                    return Err(format!("shady host {host:?} is too short to match safely"));
                }
                if host.contains('/') {
                    prefixes.push((host, index));
                } else {
                    hosts.entry(host).or_insert(index);
                }
            }
        }
        Ok(Destinations { hosts, prefixes, specs })
    }

    /// What kind of place `address` (a URL, `host:port`, a host, `/dev/tcp/host/port`) is, if it
    /// is one to point out.
    pub fn classify(&self, address: &str) -> Option<DestinationHit> {
        let (host, path) = host_and_path(address)?;
        let hit = |entry: &str, index: usize| {
            let spec = &self.specs[index];
            Some(DestinationHit {
                address: entry.to_string(),
                category: spec.category.clone(),
                level: spec.level,
            })
        };
        // The host, then each parent domain (`a.b.duckdns.org`, `b.duckdns.org`, `duckdns.org`).
        let mut name = host.as_str();
        loop {
            if let Some(&index) = self.hosts.get(name) {
                return hit(name, index);
            }
            match name.split_once('.') {
                Some((_, parent)) if parent.contains('.') => name = parent,
                _ => break,
            }
        }
        if !self.prefixes.is_empty() && !path.is_empty() {
            let with_path = format!("{host}{path}");
            for (entry, index) in &self.prefixes {
                let at_subdomain = with_path
                    .find(entry.as_str())
                    .is_some_and(|at| at == 0 || with_path.as_bytes()[at - 1] == b'.');
                if at_subdomain {
                    return hit(entry, *index);
                }
            }
        }
        ip_written_as_number(&host)
    }
}

/// The host (lower-cased, without port or credentials) and the path of an address.
fn host_and_path(address: &str) -> Option<(String, String)> {
    let address = address.trim();
    let rest = if let Some(tcp) = address
        .strip_prefix("/dev/tcp/")
        .or_else(|| address.strip_prefix("/dev/udp/"))
    {
        return Some((tcp.split('/').next()?.to_ascii_lowercase(), String::new()));
    } else if let Some((_, rest)) = address.split_once("://") {
        rest
    } else {
        address
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.split(':').next().unwrap_or(authority),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() || host.contains(['{', '$', ' ']) {
        return None;
    }
    Some((host, path.to_string()))
}

/// A host written as an IP number: a public IPv4 address in dotted form (worth pointing out),
/// or one encoded as a single decimal, hex or octal number, or with hex or octal parts (meant
/// not to be recognised).
fn ip_written_as_number(host: &str) -> Option<DestinationHit> {
    let hit = |category: &str, level| {
        Some(DestinationHit {
            address: host.to_string(),
            category: category.to_string(),
            level,
        })
    };
    let parts: Vec<&str> = host.split('.').collect();
    let numeric = |p: &str| {
        !p.is_empty()
            && (p.bytes().all(|b| b.is_ascii_digit())
                || p.strip_prefix("0x")
                    .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit())))
    };
    if parts.is_empty() || !parts.iter().all(|p| numeric(p)) || parts.len() > 4 {
        return None;
    }
    let plain_decimal = |p: &&str| p.bytes().all(|b| b.is_ascii_digit()) && (p.len() == 1 || !p.starts_with('0'));
    // `1.2.3` and small numbers are versions and ports more often than addresses.
    if parts.iter().all(plain_decimal)
        && (parts.len() == 2
            || parts.len() == 3
            || (parts.len() == 1 && parts[0].parse::<u64>().is_ok_and(|n| n < 1 << 24)))
    {
        return None;
    }
    if parts.len() == 4 && parts.iter().all(plain_decimal) {
        let octets: Vec<u16> = parts.iter().filter_map(|p| p.parse().ok()).collect();
        if octets.len() != 4 || octets.iter().any(|&o| o > 255) {
            return None;
        }
        let private = matches!(
            octets[..],
            [10, ..] | [127, ..] | [0, ..] | [169, 254, ..] | [192, 168, ..]
        ) || (octets[0] == 172 && (16..32).contains(&octets[1]))
            || (octets[0] == 100 && (64..128).contains(&octets[1]));
        return (!private).then_some(()).and(hit("a raw IP address", Level::Medium));
    }
    hit(
        "an IP address written as a number (decimal, hex or octal) so it is not recognised",
        Level::High,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> Destinations {
        Destinations::new(vec![
            ShadySpec {
                category: "URL shortener".into(),
                hosts: vec!["bit.ly".into()],
                level: Level::High,
            },
            ShadySpec {
                category: "chat webhook".into(),
                hosts: vec!["discord.com/api/webhooks".into()],
                level: Level::Medium,
            },
            ShadySpec {
                category: "dynamic DNS".into(),
                hosts: vec!["duckdns.org".into()],
                level: Level::High,
            },
        ])
        .unwrap()
    }

    #[test]
    fn hosts_subdomains_and_paths() {
        let l = list();
        assert_eq!(l.classify("https://bit.ly/3xYz").unwrap().category, "URL shortener");
        assert_eq!(l.classify("updates.duckdns.org:443").unwrap().category, "dynamic DNS");
        assert_eq!(
            l.classify("/dev/tcp/x.duckdns.org/4444").unwrap().category,
            "dynamic DNS"
        );
        let webhook = l.classify("https://discord.com/api/webhooks/1/abc").unwrap();
        assert_eq!(webhook.level, Level::Medium);
        assert!(l.classify("https://discord.com/channels/1").is_none());
        assert!(l.classify("https://notbit.ly/x").is_none());
        assert!(l.classify("https://example.com/bit.ly").is_none());
    }

    #[test]
    fn ip_numbers() {
        let l = list();
        assert_eq!(l.classify("http://198.51.100.7/x").unwrap().level, Level::Medium);
        assert!(l.classify("http://192.168.1.10:8080/api").is_none());
        assert!(l.classify("127.0.0.1").is_none());
        assert_eq!(l.classify("http://3325256967/payload").unwrap().level, Level::High);
        assert_eq!(l.classify("http://0xc6336407/payload").unwrap().level, Level::High);
        assert_eq!(l.classify("http://0306.0063.0144.07/").unwrap().level, Level::High);
        assert!(l.classify("https://example.com").is_none());
        assert!(l.classify("v1.2.3").is_none());
    }
}
