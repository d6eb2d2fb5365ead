//! Open, click and unsubscribe links as signed tokens, and their injection into HTML.
//!
//! A token is `<base64url payload>.<base64url HMAC-SHA256 of the payload>`; the payload holds a
//! version, the kind of link, the email log id, when the link expires (version 2) and (for a
//! click) the destination URL. The destination and the expiry travel inside the signed token,
//! so a redirect needs no lookup and an altered, unsigned or lengthened link is refused before
//! anything else happens: no open redirect, and no permanent one.

use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use lol_html::html_content::ContentType;
use lol_html::{RewriteStrSettings, element, end, rewrite_str};
use ring::hmac;
use uuid::Uuid;

/// Tokens made now: version 2 carries the expiry. Version 1 tokens (no expiry) still verify;
/// their expiry is the caller's to decide (see [`Verified::expires_at`]).
const VERSION: u8 = 2;
const LEGACY_VERSION: u8 = 1;
/// How long a link works unless set otherwise.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// The longest destination wrapped; longer links are left as they are.
const URL_MAX: usize = 4096;

/// What a tracking link stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Open { email_id: Uuid },
    Click { email_id: Uuid, url: String },
    Unsubscribe { email_id: Uuid },
}

impl Link {
    fn kind(&self) -> u8 {
        match self {
            Link::Open { .. } => b'o',
            Link::Click { .. } => b'c',
            Link::Unsubscribe { .. } => b'u',
        }
    }

    pub fn email_id(&self) -> Uuid {
        match self {
            Link::Open { email_id }
            | Link::Click { email_id, .. }
            | Link::Unsubscribe { email_id } => *email_id,
        }
    }
}

/// A token whose signature is ours: what it stands for and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub link: Link,
    /// Unix seconds after which the link no longer works; `None` for a version-1 token,
    /// made before links expired.
    pub expires_at: Option<i64>,
}

impl Verified {
    /// Whether the link has expired at `now` (Unix seconds); a version-1 token never does by
    /// itself.
    pub fn expired_at(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| now > at)
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[derive(Debug, thiserror::Error)]
#[error("the HTML could not be rewritten: {0}")]
pub struct TrackingError(String);

/// Signs and checks tracking links under one key, served under `base_url` (`/t/o/…` the
/// pixel, `/t/c/…` a click, `/t/u/…` unsubscribe).
#[derive(Clone)]
pub struct Tracker {
    base_url: String,
    key: hmac::Key,
    lifetime: Duration,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("base_url", &self.base_url)
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl Tracker {
    pub fn new(base_url: &str, secret: &[u8]) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            lifetime: DEFAULT_LIFETIME,
        }
    }

    /// Links made by this tracker work for `lifetime` from when they are made.
    pub fn with_lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// The same key and lifetime, links served under `host` (a site's own tracking host)
    /// with this tracker's scheme.
    pub fn on_host(&self, host: &str) -> Self {
        let scheme = self
            .base_url
            .split_once("://")
            .map_or("https", |(scheme, _)| scheme);
        Self {
            base_url: format!("{scheme}://{host}"),
            ..self.clone()
        }
    }

    /// The same links under a fresh random key: they look as sent but never verify, so a
    /// preview cannot mint working click redirects (or open and unsubscribe links).
    pub fn inert(&self) -> Self {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            .expect("the system's random generator works");
        Self {
            base_url: self.base_url.clone(),
            key,
            lifetime: self.lifetime,
        }
    }

    /// The token of `link`, working for this tracker's lifetime from when its email was
    /// created (the time a UUID v7 carries; now for any other id). Every rendering of one
    /// email, a retried send's included, so signs the same expiry: the provider sees the same
    /// message again, and its idempotency check answers the first send.
    pub fn token(&self, link: &Link) -> String {
        let lifetime = i64::try_from(self.lifetime.as_secs()).unwrap_or(i64::MAX);
        let created = link.email_id().get_timestamp().map_or_else(unix_now, |at| {
            i64::try_from(at.to_unix().0).unwrap_or(i64::MAX)
        });
        self.token_until(link, created.saturating_add(lifetime))
    }

    /// The token of `link`, working until `expires_at` (Unix seconds).
    pub fn token_until(&self, link: &Link, expires_at: i64) -> String {
        let mut payload = vec![VERSION, link.kind()];
        payload.extend_from_slice(link.email_id().as_bytes());
        payload.extend_from_slice(&expires_at.to_be_bytes());
        if let Link::Click { url, .. } = link {
            payload.extend_from_slice(url.as_bytes());
        }
        let tag = hmac::sign(&self.key, &payload);
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        )
    }

    /// The link a token stands for, when its signature is ours (checked in constant time),
    /// expired or not: see [`Tracker::verify_token`].
    pub fn verify(&self, token: &str) -> Option<Link> {
        self.verify_token(token).map(|v| v.link)
    }

    /// The link a token stands for and its expiry, when its signature is ours (checked in
    /// constant time).
    pub fn verify_token(&self, token: &str) -> Option<Verified> {
        let (payload, tag) = token.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        hmac::verify(&self.key, &payload, &tag).ok()?;
        let (&version, rest) = payload.split_first()?;
        let (&kind, rest) = rest.split_first()?;
        if rest.len() < 16 {
            return None;
        }
        let (id, rest) = rest.split_at(16);
        let email_id = Uuid::from_slice(id).ok()?;
        let (expires_at, url) = match version {
            VERSION => {
                let (at, url) = rest.split_first_chunk::<8>()?;
                (Some(i64::from_be_bytes(*at)), url)
            }
            LEGACY_VERSION => (None, rest),
            _ => return None,
        };
        let link = match kind {
            b'o' if url.is_empty() => Link::Open { email_id },
            b'u' if url.is_empty() => Link::Unsubscribe { email_id },
            b'c' => Link::Click {
                email_id,
                url: String::from_utf8(url.to_vec()).ok()?,
            },
            _ => return None,
        };
        Some(Verified { link, expires_at })
    }

    pub fn open_url(&self, email_id: Uuid) -> String {
        format!(
            "{}/t/o/{}",
            self.base_url,
            self.token(&Link::Open { email_id })
        )
    }

    pub fn click_url(&self, email_id: Uuid, url: &str) -> String {
        let link = Link::Click {
            email_id,
            url: url.to_owned(),
        };
        format!("{}/t/c/{}", self.base_url, self.token(&link))
    }

    pub fn unsubscribe_url(&self, email_id: Uuid) -> String {
        format!(
            "{}/t/u/{}",
            self.base_url,
            self.token(&Link::Unsubscribe { email_id })
        )
    }

    /// Wraps every `http(s)` link of `html` in a click link and appends the open pixel to the
    /// body (or to the end, for a fragment without one). Other links (`mailto:`, anchors, our
    /// own links) are left as they are.
    pub fn inject(&self, html: &str, email_id: Uuid) -> Result<String, TrackingError> {
        self.prepare(html, email_id, true, "")
    }

    /// The HTML as sent: with `tracking`, what [`Tracker::inject`] does; either way `footer`
    /// (HTML, whose links are not wrapped) added at the end of the body.
    pub fn prepare(
        &self,
        html: &str,
        email_id: Uuid,
        tracking: bool,
        footer: &str,
    ) -> Result<String, TrackingError> {
        let mut appended = footer.to_owned();
        if tracking {
            appended.push_str(&format!(
                r#"<img src="{}" width="1" height="1" alt="" style="display:none;border:0">"#,
                self.open_url(email_id)
            ));
        }
        if appended.is_empty() {
            return Ok(html.to_owned());
        }
        let body_seen = Cell::new(false);
        let rewritten = rewrite_str(
            html,
            RewriteStrSettings {
                element_content_handlers: vec![
                    element!("a[href]", |el| {
                        if let Some(href) = el.get_attribute("href") {
                            let target = decode_entities(href.trim());
                            if tracking && self.should_wrap(&target) {
                                el.set_attribute("href", &self.click_url(email_id, &target))?;
                            }
                        }
                        Ok(())
                    }),
                    element!("body", |el| {
                        body_seen.set(true);
                        if let Some(handlers) = el.end_tag_handlers() {
                            let appended = appended.clone();
                            let before_end: lol_html::EndTagHandler<'static> =
                                Box::new(move |end| {
                                    end.before(&appended, ContentType::Html);
                                    Ok(())
                                });
                            handlers.push(before_end);
                        }
                        Ok(())
                    }),
                ],
                document_content_handlers: vec![end!(|end| {
                    if !body_seen.get() {
                        end.append(&appended, ContentType::Html);
                    }
                    Ok(())
                })],
                ..RewriteStrSettings::new()
            },
        )
        .map_err(|e| TrackingError(e.to_string()))?;
        Ok(rewritten)
    }

    fn should_wrap(&self, url: &str) -> bool {
        is_web_url(url)
            && !url.starts_with(&self.base_url)
            && url.len() <= URL_MAX
            && !url.contains(char::is_whitespace)
    }
}

/// Whether `url` is an `http` or `https` URL, the only destinations wrapped and redirected to.
/// Schemes are case-insensitive (RFC 3986, 3.1): `HTTPS://…` is one too.
pub fn is_web_url(url: &str) -> bool {
    let scheme_end = url.find(':').unwrap_or(0);
    let (scheme, rest) = url.split_at(scheme_end);
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
        && rest.starts_with("://")
}

/// The few character references that appear in URLs (`&amp;` above all).
fn decode_entities(value: &str) -> String {
    if !value.contains('&') {
        return value.to_owned();
    }
    value
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker() -> Tracker {
        Tracker::new(
            "https://t.example.com/",
            b"0123456789abcdef0123456789abcdef",
        )
    }

    const ID: Uuid = Uuid::from_u128(0x0193a5f0_0000_7000_8000_000000000042);

    #[test]
    fn tokens_round_trip() {
        let t = tracker();
        for link in [
            Link::Open { email_id: ID },
            Link::Unsubscribe { email_id: ID },
            Link::Click {
                email_id: ID,
                url: "https://acme.test/a?b=1&c=ü".into(),
            },
        ] {
            assert_eq!(t.verify(&t.token(&link)), Some(link));
        }
        assert!(t.open_url(ID).starts_with("https://t.example.com/t/o/"));
    }

    #[test]
    fn altered_or_foreign_tokens_are_refused() {
        let t = tracker();
        let token = t.token(&Link::Click {
            email_id: ID,
            url: "https://acme.test/".into(),
        });
        let (payload, tag) = token.split_once('.').unwrap();
        // Another destination under the same tag.
        let evil = URL_SAFE_NO_PAD.encode(
            [
                &URL_SAFE_NO_PAD.decode(payload).unwrap()[..26],
                b"https://evil.test/",
            ]
            .concat(),
        );
        assert_eq!(t.verify(&format!("{evil}.{tag}")), None);
        assert_eq!(t.verify(payload), None);
        assert_eq!(t.verify(&format!("{payload}.")), None);
        assert_eq!(t.verify("garbage"), None);
        assert_eq!(t.verify(""), None);
        let other = Tracker::new(
            "https://t.example.com",
            b"another key, same length.........",
        );
        assert_eq!(other.verify(&token), None);
    }

    #[test]
    fn the_expiry_is_signed() {
        let t = tracker();
        let link = Link::Click {
            email_id: ID,
            url: "https://acme.test/".into(),
        };
        let token = t.token_until(&link, 1_000);
        let verified = t.verify_token(&token).unwrap();
        assert_eq!(verified.expires_at, Some(1_000));
        assert!(!verified.expired_at(1_000));
        assert!(verified.expired_at(1_001));
        // A later expiry under the same tag does not verify.
        let (payload, tag) = token.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(payload).unwrap();
        bytes[18..26].copy_from_slice(&i64::MAX.to_be_bytes());
        assert_eq!(
            t.verify(&format!("{}.{tag}", URL_SAFE_NO_PAD.encode(bytes))),
            None
        );
        // A token lasts the tracker's lifetime from its email's creation, whenever it is made.
        let short = t.clone().with_lifetime(Duration::from_secs(60));
        let expiry = |token: &str| short.verify_token(token).unwrap().expires_at.unwrap();
        let created = 0x0193_a5f0_0000_i64 / 1000;
        assert_eq!(expiry(&short.token(&link)), created + 60);
        assert_eq!(short.token(&link), short.token(&link));
        let before = unix_now();
        let fresh = Link::Open {
            email_id: Uuid::now_v7(),
        };
        let at = expiry(&short.token(&fresh));
        let after = unix_now();
        assert!(
            (before + 60..=after + 60).contains(&at),
            "{at} {before} {after}"
        );
        // On a site's host: same key, same scheme.
        let own = t.on_host("links.acme.test");
        assert!(own.open_url(ID).starts_with("https://links.acme.test/t/o/"));
        assert_eq!(t.verify(&own.token(&link)), Some(link));
    }

    #[test]
    fn version_1_tokens_still_verify_without_an_expiry() {
        let t = tracker();
        let mut payload = vec![1, b'c'];
        payload.extend_from_slice(ID.as_bytes());
        payload.extend_from_slice(b"https://acme.test/");
        let tag = hmac::sign(&t.key, &payload);
        let token = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        );
        let verified = t.verify_token(&token).unwrap();
        assert_eq!(verified.expires_at, None);
        assert!(!verified.expired_at(i64::MAX));
    }

    #[test]
    fn links_are_wrapped_and_the_pixel_added() {
        let t = tracker();
        let html = r##"<html><body><p><a href="https://acme.test/x?a=1&amp;b=2">x</a>
            <a href='http://acme.test/y'>y</a> <a href="mailto:a@b.co">m</a>
            <a href="#top">top</a></p></body></html>"##;
        let out = t.inject(html, ID).unwrap();
        let hrefs: Vec<&str> = out
            .split("href=\"")
            .skip(1)
            .map(|s| &s[..s.find('"').unwrap()])
            .collect();
        assert_eq!(hrefs.len(), 4, "{out}");
        let first = hrefs[0]
            .strip_prefix("https://t.example.com/t/c/")
            .expect("wrapped");
        assert_eq!(
            t.verify(first),
            Some(Link::Click {
                email_id: ID,
                url: "https://acme.test/x?a=1&b=2".into()
            })
        );
        assert!(out.contains("href=\"mailto:a@b.co\""));
        assert!(out.contains("href=\"#top\""));
        let second = hrefs[1]
            .strip_prefix("https://t.example.com/t/c/")
            .expect("single-quoted too");
        assert_eq!(
            t.verify(second),
            Some(Link::Click {
                email_id: ID,
                url: "http://acme.test/y".into()
            })
        );
        let pixel_at = out.find("/t/o/").unwrap();
        assert!(pixel_at < out.find("</body>").unwrap());
    }

    #[test]
    fn a_fragment_gets_the_pixel_at_the_end() {
        let out = tracker().inject("<p>Hi</p>", ID).unwrap();
        assert!(
            out.starts_with("<p>Hi</p><img src=\"https://t.example.com/t/o/"),
            "{out}"
        );
    }

    #[test]
    fn web_urls_are_recognised_whatever_the_case_of_their_scheme() {
        for url in [
            "https://a.test/",
            "HTTPS://A.test/x",
            "Http://a.test",
            "http://a",
        ] {
            assert!(is_web_url(url), "{url}");
        }
        for url in [
            "javascript:alert(1)",
            "mailto:a@b.co",
            "https:/a",
            "httpsx://a",
            "//a.test",
            "",
        ] {
            assert!(!is_web_url(url), "{url}");
        }
    }
}
