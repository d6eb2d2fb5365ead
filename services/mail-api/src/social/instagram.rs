//! Instagram (a professional account, the Instagram API with Instagram Login): OAuth at
//! `/oauth/authorize` on www.instagram.com (the state binds the callback; no PKCE), the code
//! exchanged at `POST /oauth/access_token` on api.instagram.com (its `token_url`) for a
//! short-lived token and the account's `user_id`, that token exchanged for a long-lived one
//! (`GET /access_token`, `grant_type=ig_exchange_token`, 60 days) which is refreshed before it
//! expires (`GET /refresh_access_token`, `grant_type=ig_refresh_token`): the long-lived token
//! is its own refresh token, and is stored as both.
//!
//! Content publishing in two steps: a media container (`POST /{ig-user-id}/media` with
//! `image_url` and `caption`), then `POST /{ig-user-id}/media_publish` with its
//! `creation_id`. Images only: a post is published with its first image (Instagram fetches
//! it from its address); a post without one is refused when it is written. Videos, reels and
//! carousels are not published here.

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::Platform::Instagram as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, MediaKind, PlatformError, Published,
    SocialClient, TextRules, Tokens, form, graph_sorted, id_of,
};

const DEFAULT_BASE: &str = "https://graph.instagram.com";
const DEFAULT_AUTHORIZE: &str = "https://www.instagram.com/oauth/authorize";
const DEFAULT_TOKEN: &str = "https://api.instagram.com/oauth/access_token";
const VERSION: &str = "v21.0";
const SCOPES: &str = "instagram_business_basic,instagram_business_content_publish";

/// 2,200 characters a caption; links in it are not clickable, so they stay at the end.
pub const RULES: TextRules = TextRules {
    max_chars: 2200,
    link_chars: None,
    links_inline: false,
};

pub struct Instagram<'a>(pub &'a SocialClient);

impl Instagram<'_> {
    fn base(&self) -> String {
        self.0.base(ME, DEFAULT_BASE)
    }

    /// A long-lived token's answer (`access_token`, `expires_in`), the token its own refresh.
    async fn long_lived(
        &self,
        path: &str,
        query: &[(&str, &str)],
        handle: Option<String>,
    ) -> Result<Tokens, PlatformError> {
        self.0
            .long_lived_token(&self.base(), path, query, handle)
            .await
    }
}

impl Adapter for Instagram<'_> {
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
        let url = self.0.configured(ME, |s| &s.token_url, DEFAULT_TOKEN);
        let request = self
            .0
            .request(Method::POST, &url)?
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[
                ("client_id", &settings.client_id),
                ("client_secret", &settings.client_secret),
                ("grant_type", "authorization_code"),
                ("redirect_uri", redirect_uri),
                ("code", code),
            ])?);
        let json = graph_sorted(self.0.raw(request).await?)?;
        // Answered flat, or (newer) inside `data`.
        let short = json.pointer("/data/0").unwrap_or(&json);
        let token = short
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                PlatformError::Rejected("the token answer has no access_token".into())
            })?;
        let user_id = id_of(short, "/user_id")?;
        self.long_lived(
            "access_token",
            &[
                ("grant_type", "ig_exchange_token"),
                ("client_secret", &settings.client_secret),
                ("access_token", token),
            ],
            Some(user_id),
        )
        .await
    }

    async fn refresh(&self, account: &Account) -> Result<Tokens, PlatformError> {
        let token = account.refresh.as_deref().unwrap_or(&account.access);
        self.long_lived(
            "refresh_access_token",
            &[("grant_type", "ig_refresh_token"), ("access_token", token)],
            account.handle.clone(),
        )
        .await
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Instagram connects through GET /api/integrations/social/instagram/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let user = account
            .handle
            .as_deref()
            .ok_or_else(|| PlatformError::Rejected("the account has no user id".into()))?;
        let image = draft.require(MediaKind::Image, ME)?;
        let mut fields = vec![("image_url", image.url.as_str()), ("caption", draft.text)];
        if let Some(alt) = &image.alt {
            fields.push(("alt_text", alt));
        }
        let container = self
            .post(account, &format!("{user}/media"), &fields)
            .await?;
        let creation_id = id_of(&container, "/id")?;
        let published = self
            .post(
                account,
                &format!("{user}/media_publish"),
                &[("creation_id", &creation_id)],
            )
            .await?;
        Ok(Published {
            id: id_of(&published, "/id")?,
        })
    }
}

impl Instagram<'_> {
    async fn post(
        &self,
        account: &Account,
        path: &str,
        fields: &[(&str, &str)],
    ) -> Result<Value, PlatformError> {
        let url = format!("{}/{VERSION}/{path}", self.base());
        let request = self
            .0
            .request(Method::POST, &url)?
            .bearer_auth(&account.access)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(fields)?);
        graph_sorted(self.0.raw(request).await?)
    }
}
