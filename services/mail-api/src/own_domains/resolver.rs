//! The lookups of a domain's records through `hickory-resolver`: the configured resolver over
//! UDP and TCP (or the system's), no cache (a check must see a record that was just removed),
//! a short time-out, every record of a domain looked up at once.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::Context as _;
use hickory_resolver::config::{NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{Name, RData, RecordType as DnsType};
use hickory_resolver::{Resolver, TokioResolver};

use super::records::{self, Expected, Purpose, RecordState, RecordType};
use super::{DnsSettings, Publishing};

/// How long one lookup may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// Looks records up and says whether they are published as required.
pub struct DnsChecker {
    resolver: TokioResolver,
    pub publishing: Publishing,
}

impl DnsChecker {
    pub fn new(settings: &DnsSettings, publishing: Publishing) -> anyhow::Result<Self> {
        let mut options = ResolverOpts::default();
        options.cache_size = 0;
        options.timeout = TIMEOUT;
        options.attempts = 1;
        let builder = match settings.resolver.trim() {
            "" => TokioResolver::builder_tokio()
                .context("the system's resolver configuration (MAIL_DNS__RESOLVER is empty)")?,
            address => {
                let address = resolver_address(address)?;
                let mut server = NameServerConfig::udp_and_tcp(address.ip());
                for connection in &mut server.connections {
                    connection.port = address.port();
                }
                Resolver::builder_with_config(
                    ResolverConfig::from_name_servers(vec![server]),
                    TokioRuntimeProvider::default(),
                )
            }
        };
        let resolver = builder
            .with_options(options)
            .build()
            .context("building the DNS resolver")?;
        Ok(Self {
            resolver,
            publishing,
        })
    }

    /// Looks every record up at once: what each is found to be.
    pub async fn check(&self, expected: &[Expected]) -> Vec<(Purpose, RecordState)> {
        let lookups = expected.iter().map(|record| async move {
            let state = match self.answers(record).await {
                Ok(answers) if records::satisfied(record, &self.publishing, &answers) => {
                    RecordState::Found
                }
                Ok(_) => RecordState::Missing,
                Err(()) => RecordState::Error,
            };
            (record.purpose, state)
        });
        futures_util::future::join_all(lookups).await
    }

    /// The answers at the record's name (none when the name or the type does not exist);
    /// `Err` when the resolver gave no answer.
    pub(crate) async fn answers(&self, record: &Expected) -> Result<Vec<String>, ()> {
        let Ok(name) = Name::from_ascii(format!("{}.", record.name)) else {
            return Ok(Vec::new());
        };
        let wanted = match record.record_type {
            RecordType::Txt => DnsType::TXT,
            RecordType::Cname => DnsType::CNAME,
        };
        let lookup = match self.resolver.lookup(name, wanted).await {
            Ok(lookup) => lookup,
            Err(err) if err.is_no_records_found() || err.is_nx_domain() => return Ok(Vec::new()),
            Err(err) => {
                tracing::info!(name = %record.name, error = %err, "DNS lookup failed");
                return Err(());
            }
        };
        Ok(lookup
            .answers()
            .iter()
            .filter_map(|answer| match &answer.data {
                RData::TXT(txt) => Some(
                    txt.txt_data
                        .iter()
                        .map(|part| String::from_utf8_lossy(part))
                        .collect::<String>(),
                ),
                RData::CNAME(target) => Some(target.0.to_ascii()),
                _ => None,
            })
            .collect())
    }
}

/// What a blocklist answers for a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// The name does not exist in the list's zone.
    Clean,
    /// The list's A records (`127.0.0.x`) and TXT reasons, if any.
    Listed {
        codes: Vec<std::net::Ipv4Addr>,
        reasons: Vec<String>,
    },
    /// The resolver gave no answer.
    Error,
}

impl DnsChecker {
    /// Looks `name` up in a DNS blocklist (A, then TXT for the reason when listed).
    pub async fn blocklist(&self, name: &str) -> Listing {
        let Ok(fqdn) = Name::from_ascii(format!("{}.", name.trim_end_matches('.'))) else {
            return Listing::Error;
        };
        let codes: Vec<std::net::Ipv4Addr> =
            match self.resolver.lookup(fqdn.clone(), DnsType::A).await {
                Ok(lookup) => lookup
                    .answers()
                    .iter()
                    .filter_map(|answer| match &answer.data {
                        RData::A(a) => Some(a.0),
                        _ => None,
                    })
                    .collect(),
                Err(err) if err.is_no_records_found() || err.is_nx_domain() => {
                    return Listing::Clean;
                }
                Err(err) => {
                    tracing::info!(%name, error = %err, "blocklist lookup failed");
                    return Listing::Error;
                }
            };
        if codes.is_empty() {
            return Listing::Clean;
        }
        let reasons = match self.resolver.lookup(fqdn, DnsType::TXT).await {
            Ok(lookup) => lookup
                .answers()
                .iter()
                .filter_map(|answer| match &answer.data {
                    RData::TXT(txt) => Some(
                        txt.txt_data
                            .iter()
                            .map(|part| String::from_utf8_lossy(part))
                            .collect::<String>(),
                    ),
                    _ => None,
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        Listing::Listed { codes, reasons }
    }
}

/// `host:port` (a name is resolved once, at start).
fn resolver_address(address: &str) -> anyhow::Result<SocketAddr> {
    address
        .to_socket_addrs()
        .with_context(|| format!("MAIL_DNS__RESOLVER {address:?} is not host:port"))?
        .next()
        .with_context(|| format!("MAIL_DNS__RESOLVER {address:?} has no address"))
}
