//! The public origin absolute links are built on (OAuth metadata, `WWW-Authenticate`, download
//! links), never taken from a client's word alone:
//!
//! 1. the configured public origin (`<SERVICE>_OAUTH__ISSUER`), whenever it is set;
//! 2. else, for a request from a configured proxy (`<SERVICE>_OAUTH__TRUSTED_PROXIES`,
//!    addresses or CIDRs), the host and scheme it forwards (`Forwarded`, `X-Forwarded-Host`,
//!    `X-Forwarded-Proto`, else `Host`);
//! 3. else the request's `Host` when it is a loopback name or address (local development and
//!    tests);
//! 4. else none: the caller refuses (421) or falls back to a relative link.

use std::net::IpAddr;

use actix_web::HttpRequest;
use actix_web::http::header;
use serde::{Deserialize, Deserializer};

/// Addresses and networks whose forwarded headers are believed. Empty by default: no proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

impl TrustedProxies {
    /// A comma-separated list of addresses and CIDRs (`10.0.0.0/8, 192.168.1.10, ::1`).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut networks = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (address, bits) = match entry.split_once('/') {
                Some((address, bits)) => (address, Some(bits)),
                None => (entry, None),
            };
            let address: IpAddr = address
                .parse()
                .map_err(|_| format!("trusted proxy {entry:?} is not an address or a CIDR"))?;
            let max = if address.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                None => max,
                Some(bits) => bits
                    .parse::<u8>()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("trusted proxy {entry:?} has a bad prefix length"))?,
            };
            networks.push((address, bits));
        }
        Ok(Self(networks))
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0
            .iter()
            .any(|(network, bits)| in_network(ip, canonical(*network), *bits))
    }

    /// Whether `req` came from one of the proxies.
    pub fn sent(&self, req: &HttpRequest) -> bool {
        req.peer_addr().is_some_and(|peer| self.contains(peer.ip()))
    }
}

impl<'de> Deserialize<'de> for TrustedProxies {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let list = String::deserialize(deserializer)?;
        Self::parse(&list).map_err(serde::de::Error::custom)
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn in_network(ip: IpAddr, network: IpAddr, bits: u8) -> bool {
    let mask = |width: u32| {
        if bits == 0 {
            0u128
        } else {
            u128::MAX << (width - u32::from(bits))
        }
    };
    match (ip, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let m = mask(32);
            (u128::from(u32::from(a)) & m) == (u128::from(u32::from(n)) & m)
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let m = mask(128);
            (u128::from(a) & m) == (u128::from(n) & m)
        }
        _ => false,
    }
}

/// The origin (`scheme://host[:port]`) of links answered to `req`; `None` when nothing names
/// one that can be trusted.
pub fn public_origin(
    configured: &str,
    proxies: &TrustedProxies,
    req: &HttpRequest,
) -> Option<String> {
    let configured = configured.trim_end_matches('/');
    if !configured.is_empty() {
        return Some(configured.to_owned());
    }
    if proxies.sent(req) {
        let info = req.connection_info();
        let (scheme, host) = (info.scheme(), info.host());
        return (matches!(scheme, "http" | "https") && well_formed_host(host))
            .then(|| format!("{scheme}://{host}"));
    }
    let host = req.headers().get(header::HOST)?.to_str().ok()?;
    if !is_loopback_host(host) {
        return None;
    }
    let scheme = if req.app_config().secure() {
        "https"
    } else {
        "http"
    };
    Some(format!("{scheme}://{host}"))
}

/// The caller's address: the peer's, or for a request from a trusted proxy the client address
/// it forwards.
pub fn client_address(proxies: &TrustedProxies, req: &HttpRequest) -> String {
    if proxies.sent(req)
        && let Some(forwarded) = req.connection_info().realip_remote_addr()
    {
        return forwarded.to_owned();
    }
    req.peer_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A host and optional port of safe characters only (it goes into headers and documents).
fn well_formed_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
}

/// `localhost`, a `*.localhost` name (RFC 6761), or a loopback address, with an optional port.
pub fn is_loopback_host(host: &str) -> bool {
    if !well_formed_host(host) {
        return false;
    }
    // `[v6]`, `[v6]:port`, `name` or `name:port`; `after` is what follows the name.
    let (name, after) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some(split) => split,
            None => return false,
        },
        None => match host.find(':') {
            Some(at) => (&host[..at], &host[at..]),
            None => (host, ""),
        },
    };
    let port_ok = after.is_empty()
        || after.strip_prefix(':').is_some_and(|p| {
            !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
        });
    if !port_ok {
        return false;
    }
    let name = name.to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    name.parse::<IpAddr>()
        .is_ok_and(|ip| canonical(ip).is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for host in [
            "127.0.0.1:8081",
            "127.1.2.3",
            "localhost",
            "LOCALHOST:80",
            "mail.localhost:8000",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8081",
            "10.0.0.1",
            "localhost.evil.example",
            "127.0.0.1:99999x",
            "[::2]:80",
            "127.0.0.1:80:80",
            "local host",
            "",
            "localhost\"",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn proxies() {
        let p = TrustedProxies::parse("10.0.0.0/8, 192.168.1.10,fd00::/8").unwrap();
        assert!(p.contains("10.1.2.3".parse().unwrap()));
        assert!(p.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(p.contains("192.168.1.10".parse().unwrap()));
        assert!(!p.contains("192.168.1.11".parse().unwrap()));
        assert!(p.contains("fd12::1".parse().unwrap()));
        assert!(!p.contains("127.0.0.1".parse().unwrap()));
        assert!(TrustedProxies::parse("").unwrap().0.is_empty());
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse("proxy.example").is_err());
        assert!(
            TrustedProxies::parse("0.0.0.0/0")
                .unwrap()
                .contains("1.2.3.4".parse().unwrap())
        );
    }
}
