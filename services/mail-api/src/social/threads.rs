//! Threads: OAuth at `/oauth/authorize` on threads.net (the state binds the callback; no
//! PKCE), the code exchanged at `POST /oauth/access_token` on graph.threads.net for a
//! short-lived token and the account's `user_id`, that token exchanged for a long-lived one
//! (`GET /access_token`, `grant_type=th_exchange_token`, 60 days), which is refreshed before
//! it expires (`GET /refresh_access_token`, `grant_type=th_refresh_token`): the long-lived
//! token is its own refresh token, and is stored as both.
//!
//! Publishing in two steps: a container (`POST /{user-id}/threads`, `media_type` `TEXT`, or
//! `IMAGE` with `image_url` when the post carries an image), then
//! `POST /{user-id}/threads_publish` with its `creation_id`. Videos are not published here
//! (the text is).

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::Platform::Threads as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, MediaKind, PlatformError, Published,
    SocialClient, TextRules, Tokens, form, graph_sorted, id_of,
};

const DEFAULT_BASE: &str = "https://graph.threads.net";
const DEFAULT_AUTHORIZE: &str = "https://threads.net/oauth/authorize";
const VERSION: &str = "v1.0";
const SCOPES: &str = "threads_basic,threads_content_publish";

/// 500 characters a post; a link is text like any other.
pub const RULES: TextRules = TextRules {
    max_chars: 500,
    link_chars: None,
    links_inline: true,
};

pub struct Threads<'a>(pub &'a SocialClient);

impl Threads<'_> {
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

impl Adapter for Threads<'_> {
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
        let url = self.0.configured(
            ME,
            |s| &s.token_url,
            &format!("{}/oauth/access_token", self.base()),
        );
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
        let short = &json;
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
                ("grant_type", "th_exchange_token"),
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
            &[("grant_type", "th_refresh_token"), ("access_token", token)],
            account.handle.clone(),
        )
        .await
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Threads connects through GET /api/integrations/social/threads/connect".into(),
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
        let mut fields = vec![("text", draft.text)];
        match draft.first(MediaKind::Image) {
            Some(image) => {
                fields.push(("media_type", "IMAGE"));
                fields.push(("image_url", &image.url));
                if let Some(alt) = &image.alt {
                    fields.push(("alt_text", alt));
                }
            }
            None => fields.push(("media_type", "TEXT")),
        }
        let container = self
            .post(account, &format!("{user}/threads"), &fields)
            .await?;
        let creation_id = id_of(&container, "/id")?;
        let published = self
            .post(
                account,
                &format!("{user}/threads_publish"),
                &[("creation_id", &creation_id)],
            )
            .await?;
        Ok(Published {
            id: id_of(&published, "/id")?,
        })
    }
}

impl Threads<'_> {
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
