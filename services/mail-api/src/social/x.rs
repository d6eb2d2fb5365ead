//! X: OAuth 2 with PKCE (`/i/oauth2/authorize` on x.com, `/2/oauth2/token` on the API, a
//! confidential client's Basic credentials, `offline.access` for a refresh token that
//! rotates), posts through `POST /2/tweets`. X has no idempotency key: a publication is
//! stored as published the moment X answers, and never sent again once it is.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Platform::X as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, PlatformError, Published, SocialClient,
    TextRules, Tokens, form, oauth_tokens,
};

const DEFAULT_BASE: &str = "https://api.x.com";
const DEFAULT_AUTHORIZE: &str = "https://x.com/i/oauth2/authorize";
const SCOPES: &str = "tweet.read tweet.write users.read offline.access";

/// 280 characters, every link 23.
pub const RULES: TextRules = TextRules {
    max_chars: 280,
    link_chars: Some(23),
    links_inline: true,
};

pub struct X<'a>(pub &'a SocialClient);

impl X<'_> {
    fn base(&self) -> String {
        self.0.base(ME, DEFAULT_BASE)
    }

    async fn token(&self, pairs: &[(&str, &str)]) -> Result<Tokens, PlatformError> {
        let settings = self.0.settings.platform(ME);
        let request = self
            .0
            .request(Method::POST, &format!("{}/2/oauth2/token", self.base()))?
            .basic_auth(&settings.client_id, Some(&settings.client_secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(pairs)?);
        oauth_tokens(&self.0.json(request).await?)
    }

    async fn handle(&self, access: &str) -> Option<String> {
        let url = format!("{}/2/users/me", self.base());
        let request = self.0.request(Method::GET, &url).ok()?.bearer_auth(access);
        let json = self.0.json(request).await.ok()?;
        json.pointer("/data/username")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

impl Adapter for X<'_> {
    fn authorize_url(&self, req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        self.0.code_authorization(
            ME,
            DEFAULT_AUTHORIZE,
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
        let client_id = self.0.settings.platform(ME).client_id.clone();
        let mut tokens = self
            .token(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("client_id", &client_id),
                ("redirect_uri", redirect_uri),
                ("code_verifier", verifier),
            ])
            .await?;
        tokens.handle = self.handle(&tokens.access).await;
        Ok(tokens)
    }

    async fn refresh(&self, account: &Account) -> Result<Tokens, PlatformError> {
        let Some(refresh) = &account.refresh else {
            return Err(PlatformError::Unauthorized);
        };
        let client_id = self.0.settings.platform(ME).client_id.clone();
        let mut tokens = self
            .token(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
                ("client_id", &client_id),
            ])
            .await?;
        tokens.handle = account.handle.clone();
        // X rotates the refresh token; one not given back stays the one we have.
        if tokens.refresh.is_none() {
            tokens.refresh = Some(refresh.clone());
        }
        Ok(tokens)
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "X connects through GET /api/integrations/social/x/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let text = draft.text;
        let request = self
            .0
            .request(Method::POST, &format!("{}/2/tweets", self.base()))?
            .bearer_auth(&account.access)
            .json(&json!({"text": text}));
        let json = self.0.json(request).await?;
        let id = json
            .pointer("/data/id")
            .and_then(Value::as_str)
            .ok_or_else(|| PlatformError::Rejected("the post answer has no data.id".into()))?;
        Ok(Published { id: id.to_owned() })
    }
}
