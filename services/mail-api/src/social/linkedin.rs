//! LinkedIn: OAuth 2 (`/oauth/v2/authorization`, `/oauth/v2/accessToken` on www.linkedin.com;
//! LinkedIn offers PKCE to native clients only, so the state alone binds the callback), the
//! member from `/v2/userinfo` (OpenID Connect), posts through `POST /rest/posts` (versioned
//! API), whose id comes back in the `x-restli-id` header. LinkedIn has no idempotency key.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Platform::Linkedin as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, PlatformError, Published, SocialClient,
    TextRules, Tokens, form, oauth_tokens,
};

const DEFAULT_BASE: &str = "https://api.linkedin.com";
const DEFAULT_AUTHORIZE: &str = "https://www.linkedin.com/oauth/v2/authorization";
const DEFAULT_TOKEN: &str = "https://www.linkedin.com/oauth/v2/accessToken";
const SCOPES: &str = "openid profile w_member_social";
/// The version of the posts API the requests are written for.
const VERSION: &str = "202405";

/// 3,000 characters a post; a link is text like any other.
pub const RULES: TextRules = TextRules {
    max_chars: 3000,
    link_chars: None,
    links_inline: true,
};

pub struct Linkedin<'a>(pub &'a SocialClient);

impl Linkedin<'_> {
    fn base(&self) -> String {
        self.0.base(ME, DEFAULT_BASE)
    }

    fn token_url(&self) -> String {
        let configured = &self.0.settings.platform(ME).token_url;
        if configured.is_empty() {
            DEFAULT_TOKEN.to_owned()
        } else {
            configured.clone()
        }
    }

    async fn token(&self, pairs: &[(&str, &str)]) -> Result<Tokens, PlatformError> {
        let request = self
            .0
            .request(Method::POST, &self.token_url())?
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(pairs)?);
        oauth_tokens(&self.0.json(request).await?)
    }

    /// The member's URN, the author of their posts.
    async fn member(&self, access: &str) -> Option<String> {
        let url = format!("{}/v2/userinfo", self.base());
        let request = self.0.request(Method::GET, &url).ok()?.bearer_auth(access);
        let json = self.0.json(request).await.ok()?;
        json.get("sub")
            .and_then(Value::as_str)
            .map(|sub| format!("urn:li:person:{sub}"))
    }
}

impl Adapter for Linkedin<'_> {
    fn authorize_url(&self, req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        self.0
            .code_authorization(ME, DEFAULT_AUTHORIZE, SCOPES, req, &[])
    }

    async fn exchange(
        &self,
        code: &str,
        _verifier: &str,
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
            ])
            .await?;
        tokens.handle = self.member(&tokens.access).await;
        if tokens.handle.is_none() {
            return Err(PlatformError::Rejected(
                "LinkedIn did not say who the member is".into(),
            ));
        }
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
        if tokens.refresh.is_none() {
            tokens.refresh = Some(refresh.clone());
        }
        Ok(tokens)
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "LinkedIn connects through GET /api/integrations/social/linkedin/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let text = draft.text;
        let author = account
            .handle
            .as_deref()
            .ok_or_else(|| PlatformError::Rejected("the account has no member".into()))?;
        let request = self
            .0
            .request(Method::POST, &format!("{}/rest/posts", self.base()))?
            .bearer_auth(&account.access)
            .header("linkedin-version", VERSION)
            .header("x-restli-protocol-version", "2.0.0")
            .json(&json!({
                "author": author,
                "commentary": text,
                "visibility": "PUBLIC",
                "distribution": {
                    "feedDistribution": "MAIN_FEED",
                    "targetEntities": [],
                    "thirdPartyDistributionChannels": [],
                },
                "lifecycleState": "PUBLISHED",
                "isReshareDisabledByAuthor": false,
            }));
        let (_, headers) = self.0.send(request).await?;
        let id = headers
            .get("x-restli-id")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| PlatformError::Rejected("the post answer has no x-restli-id".into()))?;
        Ok(Published { id: id.to_owned() })
    }
}
