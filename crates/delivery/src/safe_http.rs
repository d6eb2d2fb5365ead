//! Outbound HTTP to addresses a project chooses (its webhook endpoints, its chat-alert URL):
//! a `reqwest` client whose resolver checks every address a name resolves to and hands the
//! connector only checked addresses, so what was checked is what is connected to. Address
//! literals never reach a resolver: [`check_url`] checks them, and [`SafeClient::post`] calls
//! it before every request. Redirects are not followed, each request has a timeout and an
//! answer is read up to a small limit.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::public_host::{HostError, is_public};

/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Which addresses a target may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetPolicy {
    /// The public internet only (the default).
    PublicOnly,
    /// Also loopback and private ranges (on-premises receivers, tests); never the cloud
    /// metadata addresses nor the rest of link-local.
    AllowPrivate,
}

impl TargetPolicy {
    pub fn new(allow_private: bool) -> Self {
        if allow_private {
            Self::AllowPrivate
        } else {
            Self::PublicOnly
        }
    }

    /// Whether a connection to `ip` is allowed.
    pub fn allows(self, ip: IpAddr) -> bool {
        if is_public(ip) {
            return true;
        }
        self == Self::AllowPrivate && !is_metadata(ip) && is_private_or_loopback(ip)
    }
}

/// The cloud metadata services' addresses (AWS, GCP, Azure, Alibaba; AWS's IPv6 one), in
/// whatever IPv6 wrapping.
pub fn is_metadata(ip: IpAddr) -> bool {
    match unwrap_v4(ip) {
        IpAddr::V4(v4) => {
            v4 == Ipv4Addr::new(169, 254, 169, 254) || v4 == Ipv4Addr::new(100, 100, 100, 200)
        }
        IpAddr::V6(v6) => v6 == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254),
    }
}

fn unwrap_v4(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn is_private_or_loopback(ip: IpAddr) -> bool {
    match unwrap_v4(ip) {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private(),
        IpAddr::V6(v6) => v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00,
    }
}

/// Why a URL cannot be a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("is not an absolute http or https URL")]
    NotHttp,
    #[error("must not carry a user name or password")]
    Credentials,
    #[error(transparent)]
    Host(#[from] HostError),
}

/// Checks a URL without resolving it: `http`/`https`, a host, no credentials, and an address
/// literal only when the policy allows it.
pub fn check_url(raw: &str, policy: TargetPolicy) -> Result<Url, TargetError> {
    let url = Url::parse(raw).map_err(|_| TargetError::NotHttp)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(TargetError::NotHttp);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetError::Credentials);
    }
    let host = url.host_str().ok_or(TargetError::NotHttp)?;
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    if let Some(address) = literal
        && !policy.allows(address)
    {
        return Err(HostError::NotPublic {
            host: host.to_owned(),
            address,
        }
        .into());
    }
    Ok(url)
}

/// The resolver that refuses a name with any address the policy does not allow.
#[derive(Debug, Clone)]
struct CheckingResolver {
    policy: TargetPolicy,
}

impl Resolve for CheckingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host.as_str(), 0)))
                    .await
                    .map_err(|_| HostError::Unresolved {
                        host: host.clone(),
                        reason: "timed out".to_owned(),
                    })?
                    .map_err(|e| HostError::Unresolved {
                        host: host.clone(),
                        reason: e.to_string(),
                    })?
                    .collect();
            if let Some(bad) = found.iter().find(|a| !policy.allows(a.ip())) {
                return Err(Box::new(HostError::NotPublic {
                    host,
                    address: bad.ip(),
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            if found.is_empty() {
                return Err(Box::new(HostError::Unresolved {
                    host,
                    reason: "no address".to_owned(),
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// What an endpoint answered (its body cut at the client's limit).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("{0}")]
    Transport(String),
}

/// The client for project-chosen targets.
#[derive(Debug, Clone)]
pub struct SafeClient {
    client: reqwest::Client,
    policy: TargetPolicy,
    max_body: usize,
}

impl SafeClient {
    /// A client whose requests end after `timeout` and whose answers are read up to
    /// `max_body` bytes.
    pub fn new(
        policy: TargetPolicy,
        timeout: Duration,
        max_body: usize,
    ) -> Result<Self, reqwest::Error> {
        Self::with_roots(policy, timeout, max_body, Vec::new())
    }

    /// [`Self::new`], also trusting `roots` (a private CA) besides the system's.
    pub fn with_roots(
        policy: TargetPolicy,
        timeout: Duration,
        max_body: usize,
        roots: Vec<reqwest::Certificate>,
    ) -> Result<Self, reqwest::Error> {
        tls_kit::install();
        let mut builder = reqwest::Client::builder()
            .dns_resolver(Arc::new(CheckingResolver { policy }))
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .no_proxy()
            .user_agent("mail-webhooks/1");
        for root in roots {
            builder = builder.add_root_certificate(root);
        }
        let client = builder.build()?;
        Ok(Self {
            client,
            policy,
            max_body,
        })
    }

    pub fn policy(&self) -> TargetPolicy {
        self.policy
    }

    /// The underlying client, for a protocol client that makes its own requests (a tenant's
    /// model endpoint): its resolver checks every address a name resolves to; a URL's
    /// address literal must have passed [`check_url`].
    pub fn http(&self) -> &reqwest::Client {
        &self.client
    }

    /// Posts `body` (JSON) to `url` with `headers`; the answer's status and the start of its
    /// body.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<Answer, PostError> {
        let url = check_url(url, self.policy)?;
        let mut request = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| PostError::Transport(describe(&e)))?;
        let status = response.status().as_u16();
        let mut response = response;
        let mut read = Vec::new();
        while read.len() < self.max_body {
            match response.chunk().await {
                Ok(Some(chunk)) => read.extend_from_slice(&chunk),
                // The status is what counts; a body that breaks off is simply cut.
                Ok(None) | Err(_) => break,
            }
        }
        read.truncate(self.max_body);
        Ok(Answer {
            status,
            body: String::from_utf8_lossy(&read).into_owned(),
        })
    }
}

/// The error with its causes (a refused address shows up as a cause of the connect error).
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_targets_only_when_allowed_and_metadata_never() {
        let public = TargetPolicy::PublicOnly;
        let private = TargetPolicy::AllowPrivate;
        for url in [
            "http://169.254.169.254/",
            "http://127.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://10.0.0.1/",
            "http://100.64.0.1/",
            "http://[fd00:ec2::254]/",
        ] {
            assert!(check_url(url, public).is_err(), "{url}");
        }
        assert!(check_url("http://127.0.0.1:9/x", private).is_ok());
        assert!(check_url("http://10.0.0.1/", private).is_ok());
        for url in [
            "http://169.254.169.254/latest",
            "http://[::ffff:169.254.169.254]/",
            "http://[fd00:ec2::254]/",
            "http://169.254.1.1/",
            "http://100.64.0.1/",
        ] {
            assert!(check_url(url, private).is_err(), "{url}");
        }
        assert!(check_url("https://hooks.example.com/in", public).is_ok());
        assert!(check_url("ftp://example.com/", public).is_err());
        assert!(check_url("https://u:p@example.com/", public).is_err());
        assert!(check_url("not a url", public).is_err());
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_when_connecting() {
        let client =
            SafeClient::new(TargetPolicy::PublicOnly, Duration::from_secs(2), 1024).unwrap();
        let err = client
            .post("http://localhost:9/", &[], b"{}".to_vec())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a public address"), "{err}");
    }
}
