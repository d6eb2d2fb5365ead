//! Bluesky: an app password (`com.atproto.server.createSession`), sessions renewed with
//! `com.atproto.server.refreshSession`, posts written with `com.atproto.repo.createRecord`
//! under a record key made from the publication's id, so a retried publication finds the
//! record it already wrote (`com.atproto.repo.getRecord`) instead of writing another.

use chrono::{DateTime, SecondsFormat, Utc};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Platform::Bluesky as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, PlatformError, Published, SocialClient,
    TextRules, Tokens,
};

const DEFAULT_BASE: &str = "https://bsky.social";
const COLLECTION: &str = "app.bsky.feed.post";

/// 300 characters; a link is text like any other.
pub const RULES: TextRules = TextRules {
    max_chars: 300,
    link_chars: None,
    links_inline: true,
};

pub struct Bluesky<'a>(pub &'a SocialClient);

/// The session answer's tokens; the access token's expiry read from its `exp`.
fn session(json: &Value) -> Result<Tokens, PlatformError> {
    let field = |name: &str| json.get(name).and_then(Value::as_str).map(str::to_owned);
    let access = field("accessJwt")
        .ok_or_else(|| PlatformError::Rejected("the session has no accessJwt".into()))?;
    Ok(Tokens {
        expires_at: jwt_expiry(&access),
        refresh: field("refreshJwt"),
        handle: field("handle"),
        access,
    })
}

fn jwt_expiry(jwt: &str) -> Option<DateTime<Utc>> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = data_encoding::BASE64URL_NOPAD
        .decode(payload.trim_end_matches('=').as_bytes())
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    DateTime::from_timestamp(claims.get("exp")?.as_i64()?, 0)
}

/// A record key (a TID: 53 bits of microseconds and 10 of clock id, base32-sortable) made
/// from `key`, the same for every attempt of one publication.
pub fn record_key(key: Uuid) -> String {
    const ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";
    let bytes = key.as_bytes();
    let millis = key.get_timestamp().map_or(0, |t| {
        let (secs, nanos) = t.to_unix();
        secs * 1000 + u64::from(nanos / 1_000_000)
    });
    let spread = u64::from(u16::from_be_bytes([bytes[14], bytes[15]])) % 1000;
    let micros = (millis * 1000 + spread) & ((1 << 53) - 1);
    let clock = u64::from(u16::from_be_bytes([bytes[12], bytes[13]])) & 0x3ff;
    let n = (micros << 10) | clock;
    (0..13)
        .map(|i| ALPHABET[((n >> (60 - 5 * i)) & 31) as usize] as char)
        .collect()
}

fn expired(err: PlatformError) -> PlatformError {
    match err {
        PlatformError::Rejected(reason) if reason.contains("ExpiredToken") => {
            PlatformError::Unauthorized
        }
        other => other,
    }
}

impl Bluesky<'_> {
    fn url(&self, method: &str) -> String {
        format!("{}/xrpc/{method}", self.0.base(ME, DEFAULT_BASE))
    }

    async fn existing(&self, account: &Account, rkey: &str) -> Option<Published> {
        let repo = account.handle.as_deref()?;
        let query =
            super::form(&[("repo", repo), ("collection", COLLECTION), ("rkey", rkey)]).ok()?;
        let url = format!("{}?{query}", self.url("com.atproto.repo.getRecord"));
        let request = self
            .0
            .request(Method::GET, &url)
            .ok()?
            .bearer_auth(&account.access);
        let json = self.0.json(request).await.ok()?;
        json.get("uri")
            .and_then(Value::as_str)
            .map(|uri| Published { id: uri.to_owned() })
    }
}

impl Adapter for Bluesky<'_> {
    fn authorize_url(&self, _req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Bluesky connects with an app password: POST /api/v1/social/accounts/bluesky".into(),
        ))
    }

    async fn exchange(&self, _: &str, _: &str, _: &str) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Bluesky has no authorization code".into(),
        ))
    }

    async fn refresh(&self, account: &Account) -> Result<Tokens, PlatformError> {
        let Some(refresh) = &account.refresh else {
            return Err(PlatformError::Unauthorized);
        };
        let request = self
            .0
            .request(Method::POST, &self.url("com.atproto.server.refreshSession"))?
            .bearer_auth(refresh);
        session(&self.0.json(request).await.map_err(expired)?)
    }

    async fn connect(&self, credentials: &Credentials) -> Result<Tokens, PlatformError> {
        let Credentials::Bluesky {
            identifier,
            app_password,
        } = credentials
        else {
            return Err(PlatformError::Rejected("not Bluesky credentials".into()));
        };
        let request = self
            .0
            .request(Method::POST, &self.url("com.atproto.server.createSession"))?
            .json(&json!({"identifier": identifier, "password": app_password}));
        session(&self.0.json(request).await?)
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        key: Uuid,
    ) -> Result<Published, PlatformError> {
        let text = draft.text;
        let repo = account
            .handle
            .as_deref()
            .ok_or_else(|| PlatformError::Rejected("the account has no handle".into()))?;
        let rkey = record_key(key);
        let record = json!({
            "$type": COLLECTION,
            "text": text,
            "createdAt": Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        });
        let request = self
            .0
            .request(Method::POST, &self.url("com.atproto.repo.createRecord"))?
            .bearer_auth(&account.access)
            .json(&json!({"repo": repo, "collection": COLLECTION, "rkey": rkey, "record": record}));
        match self.0.json(request).await.map_err(expired) {
            Ok(json) => {
                let uri = json.get("uri").and_then(Value::as_str).ok_or_else(|| {
                    PlatformError::Rejected("the record answer has no uri".into())
                })?;
                Ok(Published { id: uri.to_owned() })
            }
            // Written by an earlier attempt whose answer was lost: that record is the post.
            Err(PlatformError::Rejected(reason)) => match self.existing(account, &rkey).await {
                Some(found) => Ok(found),
                None => Err(PlatformError::Rejected(reason)),
            },
            Err(other) => Err(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publications_record_key_is_a_stable_tid() {
        let key = Uuid::now_v7();
        let rkey = record_key(key);
        assert_eq!(rkey.len(), 13);
        assert_eq!(rkey, record_key(key));
        assert!(rkey.starts_with(|c: char| "234567abcdefghij".contains(c)));
    }
}
