//! The forward proxy's decisions, without I/O: which hosts and ports a read-only program may
//! reach, which requests may go out (method, body, sizes), and the upstream URL they stand for.

use crate::config::EgressConfig;
use crate::policy::Disallowed;
use airlock_protocol::hosts::host_allowed;
use hyper::{HeaderMap, Method, header};
use std::net::IpAddr;

/// Request headers passed upstream; every other header stays in the proxy (cookies,
/// authorization, custom headers: a read-only fetch needs none of them).
pub const FORWARDED_REQUEST_HEADERS: [header::HeaderName; 7] = [
    header::ACCEPT,
    header::ACCEPT_LANGUAGE,
    header::ACCEPT_ENCODING,
    header::RANGE,
    header::IF_NONE_MATCH,
    header::IF_MODIFIED_SINCE,
    header::USER_AGENT,
];

/// Response headers passed back to the program.
pub const FORWARDED_RESPONSE_HEADERS: [header::HeaderName; 11] = [
    header::CONTENT_TYPE,
    header::CONTENT_LENGTH,
    header::CONTENT_ENCODING,
    header::CONTENT_RANGE,
    header::CONTENT_LANGUAGE,
    header::CONTENT_DISPOSITION,
    header::ACCEPT_RANGES,
    header::LOCATION,
    header::ETAG,
    header::LAST_MODIFIED,
    header::CACHE_CONTROL,
];

/// Where a request goes upstream: `scheme://host:port`, the port being the pinned origin's for
/// a pinned host (whose name the upstream client resolves to the pinned address), else the
/// scheme's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub origin: String,
}

fn refuse(status: u16, host: &str, reason: impl Into<String>) -> Disallowed {
    Disallowed {
        status,
        host: host.to_owned(),
        reason: reason.into(),
    }
}

/// Checks the host and port a program asked for (a CONNECT authority, or an absolute URL's),
/// with `scheme` the protocol it will speak there.
pub fn target(config: &EgressConfig, scheme: &str, host: &str, port: Option<u16>) -> Result<Target, Disallowed> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() {
        return Err(refuse(400, "", "no host named"));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() {
        return Err(refuse(
            403,
            &host,
            "IP addresses are refused: name an allow-listed host",
        ));
    }
    if !host_allowed(&config.read_only_hosts, &host) {
        return Err(refuse(403, &host, format!("{host} is not on the read-only allow-list")));
    }
    let default_port = if scheme == "https" { 443 } else { 80 };
    if port.is_some_and(|port| port != default_port) {
        return Err(refuse(
            403,
            &host,
            format!("only the standard port is allowed ({default_port} for {scheme})"),
        ));
    }
    let origin = match config.pinned.get(&host).and_then(|o| o.parse::<hyper::Uri>().ok()) {
        Some(pinned) => {
            let scheme = pinned.scheme_str().unwrap_or("https");
            match pinned.port_u16() {
                Some(port) => format!("{scheme}://{host}:{port}"),
                None => format!("{scheme}://{host}"),
            }
        }
        None => format!("{scheme}://{host}"),
    };
    Ok(Target { host, origin })
}

/// Checks what a request would carry out: its method, body and sizes. `target_len` is the
/// length of the request target as sent.
pub fn request(
    config: &EgressConfig,
    method: &Method,
    target_len: usize,
    headers: &HeaderMap,
    host: &str,
) -> Result<(), Disallowed> {
    if method != Method::GET && method != Method::HEAD {
        return Err(refuse(
            405,
            host,
            format!("{method} is refused: read-only internet allows GET and HEAD only"),
        ));
    }
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|length| length.as_bytes() != b"0");
    if has_body {
        return Err(refuse(
            400,
            host,
            "a request with a body is refused: read-only internet sends none",
        ));
    }
    if target_len > config.max_url_bytes {
        return Err(refuse(
            414,
            host,
            format!(
                "the URL is {target_len} bytes, more than the {} allowed",
                config.max_url_bytes
            ),
        ));
    }
    let header_bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if header_bytes > config.max_header_bytes {
        return Err(refuse(
            431,
            host,
            format!(
                "the headers are {header_bytes} bytes, more than the {} allowed",
                config.max_header_bytes
            ),
        ));
    }
    Ok(())
}

/// The headers sent upstream for a request with `headers`.
pub fn upstream_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in FORWARDED_REQUEST_HEADERS {
        for value in headers.get_all(&name) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> EgressConfig {
        EgressConfig {
            read_only_hosts: vec!["docs.python.org".into(), "*.example.org".into()],
            pinned: [("docs.python.org".to_owned(), "https://127.0.0.1:8443".to_owned())].into(),
            ..Default::default()
        }
    }

    #[test]
    fn targets_are_named_allowed_hosts_on_standard_ports() {
        let c = config();
        assert_eq!(
            target(&c, "https", "Docs.Python.org.", Some(443)).unwrap(),
            Target {
                host: "docs.python.org".into(),
                origin: "https://docs.python.org:8443".into()
            }
        );
        assert_eq!(
            target(&c, "http", "a.example.org", None).unwrap().origin,
            "http://a.example.org"
        );
        for (scheme, host, port) in [
            ("https", "1.1.1.1", Some(443)),
            ("https", "[::1]", Some(443)),
            ("https", "evil.test", Some(443)),
            ("https", "docs.python.org", Some(22)),
            ("http", "a.example.org", Some(8080)),
        ] {
            let refused = target(&c, scheme, host, port).unwrap_err();
            assert_eq!(refused.status, 403, "{host}:{port:?}");
        }
    }

    #[test]
    fn only_bodiless_gets_and_heads_of_bounded_size() {
        let c = config();
        let none = HeaderMap::new();
        assert!(request(&c, &Method::GET, 10, &none, "h").is_ok());
        assert!(request(&c, &Method::HEAD, 10, &none, "h").is_ok());
        for method in [
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::OPTIONS,
        ] {
            assert_eq!(request(&c, &method, 10, &none, "h").unwrap_err().status, 405);
        }
        let mut body = HeaderMap::new();
        body.insert(header::CONTENT_LENGTH, "5".parse().unwrap());
        assert_eq!(request(&c, &Method::GET, 10, &body, "h").unwrap_err().status, 400);
        let mut chunked = HeaderMap::new();
        chunked.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        assert_eq!(request(&c, &Method::GET, 10, &chunked, "h").unwrap_err().status, 400);
        let mut empty = HeaderMap::new();
        empty.insert(header::CONTENT_LENGTH, "0".parse().unwrap());
        assert!(request(&c, &Method::GET, 10, &empty, "h").is_ok());
        assert_eq!(request(&c, &Method::GET, 5000, &none, "h").unwrap_err().status, 414);
        let mut big = HeaderMap::new();
        big.insert("x-data", "a".repeat(9000).parse().unwrap());
        assert_eq!(request(&c, &Method::GET, 10, &big, "h").unwrap_err().status, 431);
    }

    #[test]
    fn only_plain_fetch_headers_go_upstream() {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, "text/html".parse().unwrap());
        headers.insert(header::COOKIE, "session=1".parse().unwrap());
        headers.insert(header::AUTHORIZATION, "Bearer x".parse().unwrap());
        headers.insert("x-exfil", "data".parse().unwrap());
        let out = upstream_headers(&headers);
        assert_eq!(out.len(), 1);
        assert_eq!(out[header::ACCEPT], "text/html");
    }
}
