//! Reading a watched page through the SSRF-safe client: every address a name resolves to is
//! checked against the deployment's policy, a redirect is followed (at most
//! [`MAX_REDIRECTS`]) only to a URL that passes the same check, the answer is read up to the
//! size limit, and robots.txt is honoured (read once per host and run).

use std::collections::HashMap;
use std::time::Duration;

use delivery::safe_http::{SafeClient, TargetPolicy, check_url};
use reqwest::Url;

use super::robots::{Robots, USER_AGENT};

/// Redirects followed per read.
pub const MAX_REDIRECTS: usize = 3;

/// A page as read: its content type and its first bytes.
pub struct Page {
    pub content_type: String,
    pub body: Vec<u8>,
}

/// Why a page was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// robots.txt disallows it for the watch.
    Disallowed,
    /// The URL, an address it resolves to, or the answer: why.
    Failed(String),
}

/// The pages' client.
#[derive(Debug, Clone)]
pub struct WebReader {
    client: SafeClient,
    max_bytes: usize,
}

impl WebReader {
    pub fn new(policy: TargetPolicy, timeout: Duration, max_bytes: usize) -> anyhow::Result<Self> {
        Ok(Self {
            client: SafeClient::new(policy, timeout, max_bytes)?,
            max_bytes,
        })
    }

    pub fn policy(&self) -> TargetPolicy {
        self.client.policy()
    }

    /// One run's reads: robots.txt is read once per host.
    pub fn session(&self) -> Session<'_> {
        Session {
            reader: self,
            robots: HashMap::new(),
        }
    }

    /// GETs `url` (checked first), without following redirects: the answer's status, its
    /// `Location`, content type and body (cut at the size limit).
    async fn get(&self, url: &Url) -> Result<(u16, Option<String>, Page), String> {
        let url = check_url(url.as_str(), self.policy()).map_err(|e| format!("the url {e}"))?;
        let mut response = self
            .client
            .http()
            .get(url)
            .header("user-agent", USER_AGENT)
            .send()
            .await
            .map_err(|e| describe(&e))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let location = header("location");
        let content_type = header("content-type").unwrap_or_default();
        let mut body = Vec::new();
        while body.len() < self.max_bytes {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(e) => return Err(describe(&e)),
            }
        }
        body.truncate(self.max_bytes);
        Ok((status, location, Page { content_type, body }))
    }
}

/// The reads of one run.
pub struct Session<'a> {
    reader: &'a WebReader,
    /// robots.txt by origin.
    robots: HashMap<String, Robots>,
}

impl Session<'_> {
    /// Reads `url`, following checked redirects, if robots.txt allows each URL read.
    pub async fn read(&mut self, url: &str) -> Result<Page, Unread> {
        let policy = self.reader.policy();
        let mut url = check_url(url, policy).map_err(|e| Unread::Failed(format!("the url {e}")))?;
        for _ in 0..=MAX_REDIRECTS {
            if !self.robots_of(&url).await.allows(&path_of(&url)) {
                return Err(Unread::Disallowed);
            }
            let (status, location, page) = self.reader.get(&url).await.map_err(Unread::Failed)?;
            match status {
                200..=299 => return Ok(page),
                301 | 302 | 303 | 307 | 308 => {
                    let location = location
                        .ok_or_else(|| Unread::Failed(format!("a {status} without a Location")))?;
                    let next = url
                        .join(&location)
                        .map_err(|_| Unread::Failed("a redirect to an invalid URL".to_owned()))?;
                    url = check_url(next.as_str(), policy)
                        .map_err(|e| Unread::Failed(format!("a redirect to a URL that {e}")))?;
                }
                other => return Err(Unread::Failed(format!("the site answered {other}"))),
            }
        }
        Err(Unread::Failed(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }

    /// The robots.txt rules of `url`'s origin, read on first use: no robots.txt (any answer
    /// but a 2xx) or one that cannot be read allows everything.
    async fn robots_of(&mut self, url: &Url) -> &Robots {
        let origin = url.origin().ascii_serialization();
        if !self.robots.contains_key(&origin) {
            let robots = match url.join("/robots.txt") {
                Ok(robots_url) => match self.reader.get(&robots_url).await {
                    Ok((200..=299, _, page)) => Robots::parse(&String::from_utf8_lossy(&page.body)),
                    _ => Robots::allow_all(),
                },
                Err(_) => Robots::allow_all(),
            };
            self.robots.insert(origin.clone(), robots);
        }
        &self.robots[&origin]
    }
}

fn path_of(url: &Url) -> String {
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

/// The error with its causes (a refused address shows up as a cause of the connect error).
fn describe(error: &reqwest::Error) -> String {
    let mut text = if error.is_timeout() {
        "the site did not answer in time".to_owned()
    } else {
        "the site could not be reached".to_owned()
    };
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

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_when_read() {
        let reader =
            WebReader::new(TargetPolicy::PublicOnly, Duration::from_secs(2), 1024).unwrap();
        let mut session = reader.session();
        let Err(Unread::Failed(error)) = session.read("http://localhost:9/pricing").await else {
            panic!("read");
        };
        assert!(error.contains("not a public address"), "{error}");
        let Err(Unread::Failed(error)) = session.read("http://169.254.169.254/latest").await else {
            panic!("read");
        };
        assert!(error.contains("the url"), "{error}");
    }
}
