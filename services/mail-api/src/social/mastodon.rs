//! Mastodon: OAuth 2 with PKCE on the instance (`/oauth/authorize`, `/oauth/token`), the
//! account from `/api/v1/accounts/verify_credentials`, statuses posted to `/api/v1/statuses`
//! with an `Idempotency-Key` (the instance answers a retried post with the first one).

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Platform::Mastodon as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, PlatformError, Published, SocialClient,
    TextRules, Tokens, form, oauth_tokens,
};

/// The default instance.
const DEFAULT_BASE: &str = "https://mastodon.social";
const SCOPES: &str = "read:accounts write:statuses";

pub const RULES: TextRules = TextRules {
    max_chars: 500,
    link_chars: Some(23),
    links_inline: true,
};

pub struct Mastodon<'a>(pub &'a SocialClient);

impl Mastodon<'_> {
    fn base(&self) -> String {
        self.0.base(ME, DEFAULT_BASE)
    }

    async fn token(&self, pairs: &[(&str, &str)]) -> Result<Tokens, PlatformError> {
        let request = self
            .0
            .request(Method::POST, &format!("{}/oauth/token", self.base()))?
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(pairs)?);
        oauth_tokens(&self.0.json(request).await?)
    }

    async fn handle(&self, access: &str) -> Option<String> {
        let url = format!("{}/api/v1/accounts/verify_credentials", self.base());
        let request = self.0.request(Method::GET, &url).ok()?.bearer_auth(access);
        let json = self.0.json(request).await.ok()?;
        json.get("acct").and_then(Value::as_str).map(str::to_owned)
    }
}

impl Adapter for Mastodon<'_> {
    fn authorize_url(&self, req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        self.0.code_authorization(
            ME,
            &format!("{}/oauth/authorize", self.base()),
            SCOPES,
            req,
            &[
                ("code_challenge", req.code_challenge),
                ("code_challenge_method", "S256"),
            ],
        )
    }

    async fn exchange(
        &self,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<Tokens, PlatformError> {
        let settings = self.0.settings.platform(ME);
        let mut tokens = self
            .token(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("client_id", &settings.client_id),
                ("client_secret", &settings.client_secret),
                ("redirect_uri", redirect_uri),
                ("code_verifier", verifier),
                ("scope", SCOPES),
            ])
            .await?;
        tokens.handle = self.handle(&tokens.access).await;
        Ok(tokens)
    }

    async fn refresh(&self, account: &Account) -> Result<Tokens, PlatformError> {
        let Some(refresh) = &account.refresh else {
            return Err(PlatformError::Unauthorized);
        };
        let settings = self.0.settings.platform(ME);
        let mut tokens = self
            .token(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
                ("client_id", &settings.client_id),
                ("client_secret", &settings.client_secret),
            ])
            .await?;
        tokens.handle = account.handle.clone();
        Ok(tokens)
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Mastodon connects through GET /api/integrations/social/mastodon/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        key: Uuid,
    ) -> Result<Published, PlatformError> {
        let text = draft.text;
        let request = self
            .0
            .request(Method::POST, &format!("{}/api/v1/statuses", self.base()))?
            .bearer_auth(&account.access)
            .header("idempotency-key", key.to_string())
            .json(&json!({"status": text}));
        let json = self.0.json(request).await?;
        let id = json
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| PlatformError::Rejected("the status answer has no id".into()))?;
        Ok(Published { id: id.to_owned() })
    }
}
