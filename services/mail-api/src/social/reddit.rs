//! Reddit: OAuth 2 (`/api/v1/authorize` on www.reddit.com with `duration=permanent` for a
//! refresh token; the state binds the callback, Reddit has no PKCE), codes and refresh tokens
//! exchanged at `POST /api/v1/access_token` with the client's Basic credentials (its
//! `token_url`), the user from `GET /api/v1/me` on oauth.reddit.com, posts through
//! `POST /api/submit` (`api_type=json`, `sr`, `kind=self` with `text` or `kind=link` with
//! `url`, `title`). Reddit answers a refused submission 200 with its own envelope,
//! `{"json": {"errors": [[code, message, field]]}}`: read as a refusal (`RATELIMIT` as a 429
//! after its `ratelimit` seconds). Every request names the client in its `User-Agent`, as
//! Reddit requires. Reddit has no idempotency key.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::Platform::Reddit as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, PlatformError, Published, SocialClient,
    TextRules, Tokens, authorize_address, clip, form, id_of, oauth_tokens,
};

const DEFAULT_BASE: &str = "https://oauth.reddit.com";
const DEFAULT_AUTHORIZE: &str = "https://www.reddit.com/api/v1/authorize";
const DEFAULT_TOKEN: &str = "https://www.reddit.com/api/v1/access_token";
const SCOPES: &str = "identity submit";
const USER_AGENT: &str = "web:mail-api:1.0";
/// A post's title, at most 300 characters.
const TITLE_CHARS: usize = 300;

/// 40,000 characters a text post; a link is text like any other.
pub const RULES: TextRules = TextRules {
    max_chars: 40_000,
    link_chars: None,
    links_inline: true,
};

pub struct Reddit<'a>(pub &'a SocialClient);

/// Reddit's own refusal in a 200 answer, if any.
fn envelope_error(json: &Value) -> Option<PlatformError> {
    let errors = json.pointer("/json/errors")?.as_array()?;
    let first = errors.first()?;
    let code = first.get(0).and_then(Value::as_str).unwrap_or("");
    let message = first.get(1).and_then(Value::as_str).unwrap_or("");
    if code == "RATELIMIT" {
        let secs = json
            .pointer("/json/ratelimit")
            .and_then(Value::as_f64)
            .unwrap_or(60.0)
            .ceil()
            .max(1.0);
        return Some(PlatformError::RateLimited(Duration::from_secs(secs as u64)));
    }
    let message: String = message.chars().take(300).collect();
    Some(PlatformError::Rejected(format!(
        "Reddit refused the post: {code}: {message}"
    )))
}

impl Reddit<'_> {
    fn base(&self) -> String {
        self.0.base(ME, DEFAULT_BASE)
    }

    async fn token(&self, pairs: &[(&str, &str)]) -> Result<Tokens, PlatformError> {
        let settings = self.0.settings.platform(ME);
        let url = self.0.configured(ME, |s| &s.token_url, DEFAULT_TOKEN);
        let request = self
            .0
            .request(Method::POST, &url)?
            .basic_auth(&settings.client_id, Some(&settings.client_secret))
            .header("user-agent", USER_AGENT)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(pairs)?);
        let json = self.0.json(request).await?;
        // A refused grant is answered 200 `{"error": "invalid_grant"}` too.
        if let Some(error) = json.get("error").and_then(Value::as_str) {
            return Err(PlatformError::Rejected(format!("Reddit refused: {error}")));
        }
        oauth_tokens(&json)
    }

    async fn name(&self, access: &str) -> Option<String> {
        let request = self
            .0
            .request(Method::GET, &format!("{}/api/v1/me", self.base()))
            .ok()?
            .bearer_auth(access)
            .header("user-agent", USER_AGENT);
        let json = self.0.json(request).await.ok()?;
        json.get("name").and_then(Value::as_str).map(str::to_owned)
    }
}

impl Adapter for Reddit<'_> {
    fn authorize_url(&self, req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        let settings = self.0.settings.platform(ME);
        let base = self
            .0
            .configured(ME, |s| &s.authorize_url, DEFAULT_AUTHORIZE);
        authorize_address(
            &base,
            &[
                ("client_id", &settings.client_id),
                ("response_type", "code"),
                ("state", req.state),
                ("redirect_uri", req.redirect_uri),
                ("duration", "permanent"),
                ("scope", SCOPES),
            ],
        )
    }

    async fn exchange(
        &self,
        code: &str,
        _verifier: &str,
        redirect_uri: &str,
    ) -> Result<Tokens, PlatformError> {
        let mut tokens = self
            .token(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri),
            ])
            .await?;
        tokens.handle = self.name(&tokens.access).await;
        Ok(tokens)
    }

    async fn refresh(&self, account: &Account) -> Result<Tokens, PlatformError> {
        let Some(refresh) = &account.refresh else {
            return Err(PlatformError::Unauthorized);
        };
        let mut tokens = self
            .token(&[("grant_type", "refresh_token"), ("refresh_token", refresh)])
            .await?;
        tokens.handle = account.handle.clone();
        // Reddit keeps a permanent refresh token unless it gives another.
        if tokens.refresh.is_none() {
            tokens.refresh = Some(refresh.clone());
        }
        Ok(tokens)
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Reddit connects through GET /api/integrations/social/reddit/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let options = draft.options.reddit.as_ref().ok_or_else(|| {
            PlatformError::Rejected("a reddit post needs options.reddit.subreddit".into())
        })?;
        let title = clip(draft.title, TITLE_CHARS);
        let mut fields = vec![
            ("api_type", "json"),
            ("sr", options.subreddit.as_str()),
            ("title", title.as_str()),
            ("resubmit", "true"),
        ];
        match &options.url {
            Some(url) => {
                fields.push(("kind", "link"));
                fields.push(("url", url));
            }
            None => {
                fields.push(("kind", "self"));
                fields.push(("text", draft.text));
            }
        }
        let request = self
            .0
            .request(Method::POST, &format!("{}/api/submit", self.base()))?
            .bearer_auth(&account.access)
            .header("user-agent", USER_AGENT)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&fields)?);
        let json = self.0.json(request).await?;
        if let Some(error) = envelope_error(&json) {
            return Err(error);
        }
        // `name` is the post's fullname (`t3_…`), the id the rest of the API takes.
        let id = id_of(&json, "/json/data/name").or_else(|_| id_of(&json, "/json/data/id"))?;
        Ok(Published { id })
    }
}
