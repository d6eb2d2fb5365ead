//! Outbound connections a project chooses (its SMTP host) must reach the public internet, never
//! the deployment's own network: loopback, private ranges, link-local (cloud metadata at
//! 169.254.169.254), carrier-grade NAT, multicast, documentation and reserved ranges are
//! refused, including IPv4 addresses wrapped in IPv6 (mapped, compatible, translated, NAT64,
//! 6to4).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The host is, or resolves to, an address outside the public internet.
    #[error("{host} ({address}) is not a public address")]
    NotPublic { host: String, address: IpAddr },
    /// The name did not resolve (now: it may later).
    #[error("{host} does not resolve: {reason}")]
    Unresolved { host: String, reason: String },
}

/// Whether `ip` is an address of the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // Carrier-grade NAT, 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments, 192.0.0.0/24.
        || (a == 192 && b == 0 && c == 0)
        // Benchmarking, 198.18.0.0/15.
        || (a == 198 && (b == 18 || b == 19))
        // Reserved, 240.0.0.0/4.
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // Unique local, fc00::/7 (also AWS's fd00:ec2::254 metadata address).
        || (first & 0xfe00) == 0xfc00
        // Link-local, fe80::/10.
        || (first & 0xffc0) == 0xfe80
        // Documentation, 2001:db8::/32.
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        // Teredo, 2001::/32: tunnels to an address we cannot see.
        || (first == 0x2001 && ip.segments()[1] == 0)
        // Local-use NAT64, 64:ff9b:1::/48: translates into the operator's own network.
        || (first == 0x64 && ip.segments()[1] == 0xff9b && ip.segments()[2] == 1)
        // Discard-only, 100::/64.
        || ip.segments()[..4] == [0x100, 0, 0, 0]
        // Benchmarking, 2001:2::/48.
        || (first == 0x2001 && ip.segments()[1] == 2 && ip.segments()[2] == 0))
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`, deprecated), IPv4-translated (`::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::/96`,
/// and the local-use `64:ff9b:1::/48`) or 6to4 (`2002::/16`) address. Each of these forms
/// reaches (or is treated by some stack as) the IPv4 address, so it is judged as that address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let from = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    // `::1` and `::` are IPv6's own loopback and unspecified, judged as such.
    if s[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return Some(from(s[6], s[7]));
    }
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return Some(from(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(from(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(from(s[1], s[2]));
    }
    None
}

/// Refuses an address literal outside the public internet; a name is not resolved here.
pub fn check_literal(host: &str) -> Result<(), HostError> {
    match literal(host) {
        Some(address) if !is_public(address) => Err(HostError::NotPublic {
            host: host.to_owned(),
            address,
        }),
        _ => Ok(()),
    }
}

fn literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Resolves `host` and answers its first address, provided every address it resolves to is
/// public (a name with one private address among public ones is refused: which one a
/// connection would use is not ours to choose).
pub async fn resolve_public(host: &str, port: u16) -> Result<SocketAddr, HostError> {
    let unresolved = |reason: String| HostError::Unresolved {
        host: host.to_owned(),
        reason,
    };
    if let Some(address) = literal(host) {
        check_literal(host)?;
        return Ok(SocketAddr::new(address, port));
    }
    let addresses: Vec<SocketAddr> =
        tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| unresolved("timed out".to_owned()))?
            .map_err(|e| unresolved(e.to_string()))?
            .collect();
    if let Some(bad) = addresses.iter().find(|a| !is_public(a.ip())) {
        return Err(HostError::NotPublic {
            host: host.to_owned(),
            address: bad.ip(),
        });
    }
    addresses
        .first()
        .copied()
        .ok_or_else(|| unresolved("no address".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        is_public(s.parse().unwrap())
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for internal in [
            "127.0.0.1",
            "127.8.8.8",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.10",
            "192.0.2.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::",
            "::1",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:a00:1::",
            "::127.0.0.1",
            "::7f00:1",
            "::10.0.0.1",
            "::169.254.169.254",
            "::ffff:0:127.0.0.1",
            "::ffff:0:10.1.2.3",
            "64:ff9b::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b:1::8.8.8.8",
            "100::1",
            "2001:2::1",
        ] {
            assert!(!public(internal), "{internal} counted as public");
        }
    }

    #[test]
    fn internet_addresses_are_public() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.0.1",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "::8.8.8.8",
            "2002:808:808::",
        ] {
            assert!(public(address), "{address} refused");
        }
    }

    #[tokio::test]
    async fn names_and_literals_are_checked_before_connecting() {
        assert!(matches!(
            resolve_public("localhost", 25).await,
            Err(HostError::NotPublic { .. })
        ));
        assert!(matches!(
            resolve_public("[::1]", 25).await,
            Err(HostError::NotPublic { .. })
        ));
        assert_eq!(
            resolve_public("1.1.1.1", 587).await.unwrap(),
            "1.1.1.1:587".parse().unwrap()
        );
        assert!(check_literal("smtp.example.com").is_ok());
        assert!(check_literal("10.0.0.1").is_err());
        assert!(check_literal("::127.0.0.1").is_err());
        assert!(check_literal("[::ffff:127.0.0.1]").is_err());
    }
}
