//! Bounces and complaints over SMTP (run by send-worker):
//!
//! - [`Verp`]: every email sent over SMTP gets its own return path,
//!   `bounce+<token>@<bounce domain>` (the envelope's `MAIL FROM` and the `Return-Path`). The
//!   token is the email log id and an HMAC-SHA256 tag of it (96 bits) under the deployment's
//!   key (`MAIL_BOUNCES__SECRET`), in lowercase base32: nothing to store, nothing to look up
//!   before the tag checks, and no one else can make a token that names an email.
//! - [`receiver`]: the SMTP server the bounce domain's MX points at. It reads delivery status
//!   notifications (RFC 3464) and feedback reports (RFC 5965, ARF) with [`report`] and records
//!   each as an event of the `smtp` provider ([`record`]): one statement, then applies it at
//!   once with the provider webhooks' own state effects ([`crate::db::webhooks::apply`]; the
//!   `webhook.inbound` queue applies again one that failed): status bounced or complained, the
//!   address suppressed, the contact unsubscribed on a complaint, `email.bounced` /
//!   `email.complained` outbound once, the chat alert.
//! - A 5xx refusal in the send worker's own SMTP conversation is the same hard bounce
//!   ([`crate::worker`]).

pub mod receiver;
pub mod report;

use std::time::Duration;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use ring::hmac;
use serde::Deserialize;
use serde_json::{Value, json};
use subtle::ConstantTimeEq as _;
use uuid::Uuid;

use crate::db::webhooks::{self, Incoming, SMTP, Signer, Taken};
pub use receiver::BounceReceiver;
pub use report::Report;

/// The local part's prefix of return paths.
const PREFIX: &str = "bounce+";
/// Bytes of the HMAC tag kept in a token.
const TAG_BYTES: usize = 12;
/// The shortest `MAIL_BOUNCES__SECRET`, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// `MAIL_BOUNCES__…` (send-worker): off unless `DOMAIN` is set.
#[derive(Clone, Deserialize)]
pub struct BounceSettings {
    /// The bounce domain (`MAIL_BOUNCES__DOMAIN`): return paths are at it, and its MX points at
    /// the receiver. Empty: no VERP, no receiver.
    #[serde(default)]
    pub domain: String,
    /// The HMAC key of the tokens (`MAIL_BOUNCES__SECRET`, at least 32 bytes). Changing it
    /// makes the return paths of mail already sent unknown.
    #[serde(default)]
    pub secret: String,
    /// Where the receiver listens (`MAIL_BOUNCES__BIND`, e.g. `0.0.0.0:25`). Empty: no receiver
    /// in this process (return paths are still set when `DOMAIN` is).
    #[serde(default)]
    pub bind: String,
    /// The largest message taken (`MAIL_BOUNCES__MAX_MESSAGE_BYTES`, default 1 MiB: a DSN
    /// carries at most the returned message).
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: usize,
    /// SMTP sessions at once (`MAIL_BOUNCES__MAX_SESSIONS`, default 64); one more is answered
    /// 421 and closed.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// How long a session may stay idle, in seconds (`MAIL_BOUNCES__IDLE_SECS`, default 300).
    #[serde(default = "default_idle_secs")]
    pub idle_secs: u64,
}

fn default_max_message_bytes() -> usize {
    1024 * 1024
}

fn default_max_sessions() -> usize {
    64
}

fn default_idle_secs() -> u64 {
    300
}

impl Default for BounceSettings {
    fn default() -> Self {
        Self {
            domain: String::new(),
            secret: String::new(),
            bind: String::new(),
            max_message_bytes: default_max_message_bytes(),
            max_sessions: default_max_sessions(),
            idle_secs: default_idle_secs(),
        }
    }
}

impl std::fmt::Debug for BounceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BounceSettings")
            .field("domain", &self.domain)
            .field("bind", &self.bind)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("max_sessions", &self.max_sessions)
            .field("idle_secs", &self.idle_secs)
            .finish_non_exhaustive()
    }
}

impl BounceSettings {
    /// The return paths, when a bounce domain is set (checked: a secret of enough length, a
    /// receiver that can start).
    pub fn verp(&self) -> anyhow::Result<Option<Verp>> {
        let domain = self.domain.trim();
        if domain.is_empty() {
            if !self.bind.trim().is_empty() {
                anyhow::bail!("MAIL_BOUNCES__BIND needs MAIL_BOUNCES__DOMAIN");
            }
            return Ok(None);
        }
        if self.max_message_bytes < 1024 || self.max_sessions == 0 || self.idle_secs == 0 {
            anyhow::bail!(
                "MAIL_BOUNCES__MAX_MESSAGE_BYTES must be at least 1024, MAIL_BOUNCES__MAX_SESSIONS \
                 and MAIL_BOUNCES__IDLE_SECS at least 1"
            );
        }
        Verp::new(domain, self.secret.as_bytes()).map(Some)
    }

    pub fn idle(&self) -> Duration {
        Duration::from_secs(self.idle_secs)
    }
}

/// Makes and reads the per-email return paths.
#[derive(Clone)]
pub struct Verp {
    domain: String,
    key: hmac::Key,
}

impl std::fmt::Debug for Verp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verp")
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

impl Verp {
    pub fn new(domain: &str, secret: &[u8]) -> anyhow::Result<Self> {
        if secret.len() < MIN_SECRET_BYTES {
            anyhow::bail!(
                "MAIL_BOUNCES__SECRET must hold at least {MIN_SECRET_BYTES} bytes when \
                 MAIL_BOUNCES__DOMAIN is set"
            );
        }
        let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if !domain.contains('.') || domain.len() > 200 || !domain.split('.').all(label_ok) {
            anyhow::bail!("MAIL_BOUNCES__DOMAIN must be a domain name");
        }
        Ok(Self {
            domain,
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        })
    }

    pub fn domain(&self) -> &str {
        &self.domain
    }

    fn tag(&self, id: Uuid) -> hmac::Tag {
        hmac::sign(&self.key, id.as_bytes())
    }

    /// `bounce+<token>@<domain>` of the email `id`.
    pub fn return_path(&self, id: Uuid) -> String {
        let mut bytes = id.as_bytes().to_vec();
        bytes.extend_from_slice(&self.tag(id).as_ref()[..TAG_BYTES]);
        let token = data_encoding::BASE32_NOPAD
            .encode(&bytes)
            .to_ascii_lowercase();
        format!("{PREFIX}{token}@{}", self.domain)
    }

    /// Whether `address` is at the bounce domain (any local part).
    pub fn is_ours(&self, address: &str) -> bool {
        address.rsplit_once('@').is_some_and(|(_, domain)| {
            domain
                .trim_end_matches('.')
                .eq_ignore_ascii_case(&self.domain)
        })
    }

    /// The email a return path names, when its tag is ours (compared in constant time).
    pub fn email_of(&self, address: &str) -> Option<Uuid> {
        if !self.is_ours(address) {
            return None;
        }
        let (local, _) = address.rsplit_once('@')?;
        let token = local
            .get(..PREFIX.len())
            .filter(|p| p.eq_ignore_ascii_case(PREFIX))
            .map(|_| &local[PREFIX.len()..])?;
        let bytes = data_encoding::BASE32_NOPAD
            .decode(token.to_ascii_uppercase().as_bytes())
            .ok()?;
        if bytes.len() != 16 + TAG_BYTES {
            return None;
        }
        let (id, tag) = bytes.split_at(16);
        let id = Uuid::from_slice(id).ok()?;
        let expected = self.tag(id);
        bool::from(expected.as_ref()[..TAG_BYTES].ct_eq(tag)).then_some(id)
    }

    /// The first return path of ours in `text` whose tag checks (a feedback report sent to
    /// another address of the domain carries the original's `Return-Path`).
    pub fn email_in(&self, text: &str) -> Option<Uuid> {
        let needle = format!("@{}", self.domain);
        let lower = text.to_ascii_lowercase();
        let mut from = 0;
        while let Some(at) = lower[from..].find(PREFIX) {
            let start = from + at;
            from = start + PREFIX.len();
            let rest = &lower[start..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || "+@.-".contains(c)))
                .unwrap_or(rest.len());
            let candidate = &rest[..end];
            if candidate.contains(&needle)
                && let Some(id) = self.email_of(candidate.trim_end_matches('.'))
            {
                return Some(id);
            }
        }
        None
    }
}

/// Records what a report says of email `email_log_id` as an event of the `smtp` provider, in
/// the provider webhooks' receipts, and applies it: one transaction for a new event. One event
/// per email and kind: a second DSN for the same email is a duplicate.
pub async fn record_and_apply(
    conn: &mut AsyncPgConnection,
    email_log_id: Uuid,
    report: &Report,
) -> QueryResult<Taken> {
    let (kind, mut data) = report.event();
    if let Some(members) = data.as_object_mut() {
        members.insert("email_log_id".to_owned(), json!(email_log_id));
    }
    let payload = json!({"type": kind, "data": data});
    let webhook_id = format!("{email_log_id}:{kind}");
    let event = Incoming {
        provider: SMTP,
        webhook_id: &webhook_id,
        signer: Signer::Deployment,
        project_id: None,
        payload: &payload,
        id_binds_payload: false,
    };
    webhooks::record_and_apply(conn, &event).await
}

/// Text of a report kept in the event (a diagnostic can be long).
fn clip(text: &str, max: usize) -> Value {
    let text = text.trim();
    match text.char_indices().nth(max) {
        Some((at, _)) => Value::from(&text[..at]),
        None => Value::from(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verp() -> Verp {
        Verp::new("Bounces.Example.test", &[7u8; 32]).unwrap()
    }

    #[test]
    fn a_return_path_names_its_email_and_nothing_else() {
        let v = verp();
        let id = Uuid::now_v7();
        let path = v.return_path(id);
        let (local, domain) = path.split_once('@').unwrap();
        assert_eq!(domain, "bounces.example.test");
        assert!(local.len() <= 64, "{local}");
        assert_eq!(v.email_of(&path), Some(id));
        assert_eq!(v.email_of(&path.to_ascii_uppercase()), Some(id));
        // Another key, another domain, an altered token: not ours.
        let other = Verp::new("bounces.example.test", &[8u8; 32]).unwrap();
        assert_eq!(other.email_of(&path), None);
        assert_eq!(
            v.email_of(&path.replace("bounces.example.test", "x.test")),
            None
        );
        let mut altered = path.clone().into_bytes();
        altered[10] = if altered[10] == b'a' { b'b' } else { b'a' };
        assert_eq!(v.email_of(&String::from_utf8(altered).unwrap()), None);
        assert_eq!(v.email_of("postmaster@bounces.example.test"), None);
        // Found inside a header block.
        let text = format!("Received: x\r\nReturn-Path: <{path}>\r\nSubject: hi\r\n");
        assert_eq!(v.email_in(&text), Some(id));
        assert!(Verp::new("bounces.example.test", b"short").is_err());
    }
}
