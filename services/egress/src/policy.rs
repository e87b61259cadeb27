//! The proxy's decisions, without I/O: which addresses count as public, which upstream a proxy
//! path stands for (if any), and how an index page's links are pointed back through the proxy.

use crate::config::EgressConfig;
use hyper::Method;
use std::net::IpAddr;

/// Whether an address is on the public internet: not loopback, private (RFC 1918, unique
/// local), link-local, shared (CGNAT), multicast, broadcast, unspecified or reserved.
/// (Documentation ranges count as public: some networks answer with them for real hosts.)
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_unspecified()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && v4.octets()[2] == 0)
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
                // NAT64 and IPv4-compatible forms could reach private IPv4 space.
                || (v6.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0])
                || v6.segments()[..6] == [0, 0, 0, 0, 0, 0])
        }
    }
}

/// Why a request was refused before anything was fetched.
#[derive(Debug, PartialEq, Eq)]
pub struct Disallowed {
    pub status: u16,
    pub host: String,
    pub reason: String,
}

/// The upstream URL a proxy path stands for: `/HOST/REST?QUERY` → `https://HOST/REST?QUERY`
/// (or the pinned origin), if the method and host are allowed.
pub fn upstream_for(config: &EgressConfig, method: &Method, uri: &hyper::Uri) -> Result<(String, String), Disallowed> {
    let refuse = |status: u16, host: &str, reason: &str| Disallowed {
        status,
        host: host.to_owned(),
        reason: reason.to_owned(),
    };
    if method != Method::GET && method != Method::HEAD {
        return Err(refuse(405, uri.host().unwrap_or(""), "only GET and HEAD are allowed"));
    }
    if uri.scheme().is_some() || uri.authority().is_some() {
        return Err(refuse(
            403,
            uri.host().unwrap_or(""),
            "absolute-form requests are refused: this is not a forward proxy",
        ));
    }
    let path = uri.path();
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (host, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host.to_ascii_lowercase();
    if host.is_empty() {
        return Err(refuse(404, "", "no host in the path"));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() || host.contains(':') {
        return Err(refuse(403, &host, "IP literals and ports are refused"));
    }
    let origin = match config.pinned.get(&host) {
        Some(pinned) => pinned.trim_end_matches('/').to_owned(),
        None if config.allow_hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) => format!("https://{host}"),
        None => return Err(refuse(403, &host, "host is not on the allow-list")),
    };
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Ok((host, format!("{origin}/{tail}{query}")))
}

/// Points every absolute link of an index page back through the proxy: a pinned origin becomes
/// its host's path, any other `http(s)://HOST/` becomes `/HOST/`. Links to hosts that are not
/// allowed are rewritten too, so that following one reaches the proxy, which refuses it and
/// reports the attempt, instead of failing unseen on the install network (which has no route).
pub fn rewrite_links(body: &[u8], config: &EgressConfig, proxy_origin: &str) -> Vec<u8> {
    let pinned: Vec<(String, String)> = config
        .pinned
        .iter()
        .map(|(host, origin)| (format!("{}/", origin.trim_end_matches('/')), host.to_ascii_lowercase()))
        .collect();
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let rest = &body[i..];
        if let Some((origin, host)) = pinned.iter().find(|(origin, _)| rest.starts_with(origin.as_bytes())) {
            out.extend_from_slice(format!("{proxy_origin}/{host}/").as_bytes());
            i += origin.len();
            continue;
        }
        let scheme = [&b"https://"[..], &b"http://"[..]]
            .into_iter()
            .find(|scheme| rest.len() > scheme.len() && rest[..scheme.len()].eq_ignore_ascii_case(scheme));
        if let Some(scheme) = scheme {
            let authority = &rest[scheme.len()..];
            let host_len = authority
                .iter()
                .position(|b| matches!(b, b'/' | b'"' | b'\'' | b'<' | b'>' | b'?' | b'#') || b.is_ascii_whitespace())
                .unwrap_or(authority.len());
            if host_len > 0 {
                out.extend_from_slice(proxy_origin.as_bytes());
                out.push(b'/');
                out.extend(authority[..host_len].iter().map(u8::to_ascii_lowercase));
                if authority.get(host_len) != Some(&b'/') {
                    out.push(b'/');
                }
                i += scheme.len() + host_len;
                continue;
            }
        }
        out.push(body[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> EgressConfig {
        EgressConfig::default()
    }

    fn target(method: Method, uri: &str) -> Result<(String, String), Disallowed> {
        upstream_for(&config(), &method, &uri.parse().unwrap())
    }

    #[test]
    fn public_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.17.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            assert!(
                !is_public(private.parse().unwrap()),
                "{private} must not count as public"
            );
        }
        for public in ["151.101.0.223", "2a04:4e42::223", "8.8.8.8"] {
            assert!(is_public(public.parse().unwrap()), "{public} is public");
        }
    }

    #[test]
    fn requests_map_to_allowed_upstreams_only() {
        assert_eq!(
            target(Method::GET, "/pypi.org/simple/six/").unwrap(),
            ("pypi.org".into(), "https://pypi.org/simple/six/".into())
        );
        assert_eq!(
            target(Method::HEAD, "/files.pythonhosted.org/packages/a/b.whl?x=1")
                .unwrap()
                .1,
            "https://files.pythonhosted.org/packages/a/b.whl?x=1"
        );
        assert_eq!(target(Method::POST, "/pypi.org/simple/").unwrap_err().status, 405);
        assert_eq!(target(Method::PUT, "/pypi.org/simple/").unwrap_err().status, 405);
        assert_eq!(target(Method::CONNECT, "pypi.org:443").unwrap_err().status, 405);
        assert_eq!(target(Method::GET, "/evil.example/x").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "/1.1.1.1/x").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "/[::1]/x").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "/pypi.org:8080/x").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "http://pypi.org/simple/").unwrap_err().status, 403);
        assert_eq!(target(Method::GET, "/PyPI.org/simple/").unwrap().0, "pypi.org");
    }

    #[test]
    fn pinned_hosts_use_their_origin() {
        let mut c = config();
        c.pinned.insert("index.test".into(), "http://127.0.0.1:9/".into());
        let (host, url) = upstream_for(&c, &Method::GET, &"/index.test/simple/x/".parse().unwrap()).unwrap();
        assert_eq!(
            (host.as_str(), url.as_str()),
            ("index.test", "http://127.0.0.1:9/simple/x/")
        );
    }

    #[test]
    fn links_are_rewritten_through_the_proxy() {
        let page =
            br#"<a href="https://files.pythonhosted.org/packages/ab/six-1.16.0-py2.py3-none-any.whl#sha256=8a">six</a>
<a href="https://evil.example/x.whl">x</a>"#;
        let out = String::from_utf8(rewrite_links(page, &config(), "http://172.18.0.1:4000")).unwrap();
        assert!(out.contains(
            "http://172.18.0.1:4000/files.pythonhosted.org/packages/ab/six-1.16.0-py2.py3-none-any.whl#sha256=8a"
        ));
        assert!(
            out.contains("http://172.18.0.1:4000/evil.example/x.whl"),
            "links to other hosts go through the proxy too, which refuses and reports them: {out}"
        );
        let refused = upstream_for(
            &config(),
            &Method::GET,
            &"/evil.example/x.whl".parse::<hyper::Uri>().unwrap(),
        );
        assert_eq!(
            refused.map_err(|r| (r.status, r.host)),
            Err((403, "evil.example".to_owned()))
        );
    }

    #[test]
    fn pinned_origins_and_odd_links_are_rewritten_once() {
        let mut c = config();
        c.pinned.insert("index.test".into(), "http://127.0.0.1:8080".into());
        let page = br#"<a href="http://127.0.0.1:8080/files/a.whl">a</a> <a href='HTTPS://Evil.Example:8443'>b</a> http:// https://x"#;
        let out = String::from_utf8(rewrite_links(page, &c, "http://gw:1")).unwrap();
        assert_eq!(
            out,
            r#"<a href="http://gw:1/index.test/files/a.whl">a</a> <a href='http://gw:1/evil.example:8443/'>b</a> http:// http://gw:1/x/"#
        );
    }
}
