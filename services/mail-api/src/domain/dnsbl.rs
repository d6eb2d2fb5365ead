//! DNS blocklists: the name a list is asked about (an IPv4 address's octets reversed, or a
//! domain, under the list's zone), and what the return codes of the well-known lists mean.

use std::net::Ipv4Addr;

/// What the list is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    /// Sending IP addresses (`4.3.2.1.zen.spamhaus.org` for 1.2.3.4).
    Ip,
    /// The sending domain (`example.com.dbl.spamhaus.org`).
    Domain,
}

/// The name to look up: `target` under `zone`.
pub fn query_name(kind: ListKind, target: &str, zone: &str) -> Option<String> {
    let zone = zone.trim().trim_end_matches('.').to_ascii_lowercase();
    match kind {
        ListKind::Ip => {
            let ip: Ipv4Addr = target.trim().parse().ok()?;
            let [a, b, c, d] = ip.octets();
            Some(format!("{d}.{c}.{b}.{a}.{zone}"))
        }
        ListKind::Domain => {
            let domain = target.trim().trim_end_matches('.').to_ascii_lowercase();
            (!domain.is_empty()).then(|| format!("{domain}.{zone}"))
        }
    }
}

/// Whether an answer is a list's error signal rather than a listing (Spamhaus answers
/// `127.255.255.x` to queries it refuses: through a public resolver, too many, malformed).
pub fn is_error_code(code: Ipv4Addr) -> bool {
    let [a, b, c, _] = code.octets();
    a == 127 && b == 255 && c == 255
}

/// What `code` means on `zone`, for the lists whose codes are published; a generic text for
/// others.
pub fn meaning(zone: &str, code: Ipv4Addr) -> &'static str {
    let zone = zone.trim().trim_end_matches('.').to_ascii_lowercase();
    let last = code.octets()[3];
    if is_error_code(code) {
        return match last {
            252 => "query refused: malformed query (not a listing)",
            254 => "query refused: sent through a public or open resolver (not a listing)",
            255 => "query refused: too many queries (not a listing)",
            _ => "query refused by the list (not a listing)",
        };
    }
    match zone.as_str() {
        "zen.spamhaus.org"
        | "sbl.spamhaus.org"
        | "xbl.spamhaus.org"
        | "pbl.spamhaus.org"
        | "sbl-xbl.spamhaus.org" => match last {
            2 => "SBL: a known spam source or spam operation",
            3 => "SBL CSS: a snowshoe or low-reputation sending address",
            4..=7 => "XBL: a host compromised by malware or exploited (botnet, open proxy)",
            9 => "SBL DROP: an address range hijacked or leased by spammers",
            10 => "PBL (ISP): an end-user address range that should not send mail directly",
            11 => "PBL (Spamhaus): an end-user or dynamic address range",
            _ => "listed by Spamhaus (see the list's lookup page)",
        },
        "dbl.spamhaus.org" => match last {
            2 => "DBL: a spam domain",
            4 => "DBL: a phishing domain",
            5 => "DBL: a malware domain",
            6 => "DBL: a botnet command-and-control domain",
            102 => "DBL: an abused legitimate domain used in spam",
            103 => "DBL: an abused legitimate redirector or URL shortener",
            104 => "DBL: an abused legitimate domain used in phishing",
            105 => "DBL: an abused legitimate domain used for malware",
            106 => "DBL: an abused legitimate domain used for botnet command and control",
            _ => "listed by the Spamhaus DBL (see the list's lookup page)",
        },
        "bl.spamcop.net" => "SpamCop: spam reported by recipients came from this address",
        "b.barracudacentral.org" => {
            "Barracuda reputation: the address sent mail Barracuda's network rates as spam"
        }
        _ => "listed (see the list's documentation for this return code)",
    }
}

/// Where a listing is taken off, for the lists that publish a removal page.
pub fn removal_url(zone: &str) -> Option<&'static str> {
    let zone = zone.trim().trim_end_matches('.').to_ascii_lowercase();
    if zone.ends_with("spamhaus.org") {
        Some("https://check.spamhaus.org/")
    } else if zone == "bl.spamcop.net" {
        Some("https://www.spamcop.net/bl.shtml")
    } else if zone == "b.barracudacentral.org" {
        Some("https://www.barracudacentral.org/rbl/removal-request")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_octets_are_reversed_and_domains_are_prefixed() {
        assert_eq!(
            query_name(ListKind::Ip, "192.0.2.10", "zen.spamhaus.org.").as_deref(),
            Some("10.2.0.192.zen.spamhaus.org")
        );
        assert_eq!(
            query_name(ListKind::Domain, "Mail.Example.com", "dbl.spamhaus.org").as_deref(),
            Some("mail.example.com.dbl.spamhaus.org")
        );
        assert_eq!(
            query_name(ListKind::Ip, "not-an-ip", "zen.spamhaus.org"),
            None
        );
    }

    #[test]
    fn codes_have_meanings_and_error_codes_are_not_listings() {
        let code = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert!(meaning("zen.spamhaus.org", code("127.0.0.2")).starts_with("SBL"));
        assert!(meaning("zen.spamhaus.org", code("127.0.0.4")).starts_with("XBL"));
        assert!(meaning("dbl.spamhaus.org", code("127.0.1.2")).contains("spam domain"));
        assert!(is_error_code(code("127.255.255.254")));
        assert!(!is_error_code(code("127.0.0.2")));
        assert!(meaning("bl.example.test", code("127.0.0.2")).starts_with("listed"));
    }
}
