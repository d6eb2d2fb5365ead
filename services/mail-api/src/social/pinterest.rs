//! Pinterest (API v5): OAuth 2 (`/oauth/` on www.pinterest.com; the state binds the callback,
//! Pinterest has no PKCE), codes and refresh tokens exchanged at `POST /v5/oauth/token` with
//! the client's Basic credentials (`grant_type=refresh_token` before the access token's 30
//! days run out), the user from `GET /v5/user_account`, pins created with `POST /v5/pins`:
//! `board_id` (the post's `options.pinterest.board_id`), `media_source`
//! `{source_type: image_url, url}` (the post's first image, which Pinterest fetches),
//! `title` (the post's title, 100 characters), `description` (its text, 500), `link` and
//! `alt_text`. Errors are `{"code", "message"}`. Pinterest has no idempotency key.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Platform::Pinterest as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, MediaKind, PlatformError, Published,
    SocialClient, TextRules, Tokens, authorize_address, clip, form, id_of, oauth_tokens,
};

const DEFAULT_BASE: &str = "https://api.pinterest.com";
const DEFAULT_AUTHORIZE: &str = "https://www.pinterest.com/oauth/";
const SCOPES: &str = "boards:read,pins:read,pins:write,user_accounts:read";
const TITLE_CHARS: usize = 100;

/// 500 characters a description; the pin's link is a field of its own.
pub const RULES: TextRules = TextRules {
    max_chars: 500,
    link_chars: None,
    links_inline: false,
};

pub struct Pinterest<'a>(pub &'a SocialClient);

impl Pinterest<'_> {
    fn base(&self) -> String {
        self.0.base(ME, DEFAULT_BASE)
    }

    async fn token(&self, pairs: &[(&str, &str)]) -> Result<Tokens, PlatformError> {
        let settings = self.0.settings.platform(ME);
        let url = self.0.configured(
            ME,
            |s| &s.token_url,
            &format!("{}/v5/oauth/token", self.base()),
        );
        let request = self
            .0
            .request(Method::POST, &url)?
            .basic_auth(&settings.client_id, Some(&settings.client_secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(pairs)?);
        oauth_tokens(&self.0.json(request).await?)
    }

    async fn username(&self, access: &str) -> Option<String> {
        let url = format!("{}/v5/user_account", self.base());
        let request = self.0.request(Method::GET, &url).ok()?.bearer_auth(access);
        let json = self.0.json(request).await.ok()?;
        json.get("username")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

impl Adapter for Pinterest<'_> {
    fn authorize_url(&self, req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        let settings = self.0.settings.platform(ME);
        let base = self
            .0
            .configured(ME, |s| &s.authorize_url, DEFAULT_AUTHORIZE);
        authorize_address(
            &base,
            &[
                ("client_id", &settings.client_id),
                ("redirect_uri", req.redirect_uri),
                ("response_type", "code"),
                ("scope", SCOPES),
                ("state", req.state),
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
        tokens.handle = self.username(&tokens.access).await;
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
        if tokens.refresh.is_none() {
            tokens.refresh = Some(refresh.clone());
        }
        Ok(tokens)
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Pinterest connects through GET /api/integrations/social/pinterest/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let options = draft.options.pinterest.as_ref().ok_or_else(|| {
            PlatformError::Rejected("a pinterest post needs options.pinterest.board_id".into())
        })?;
        let image = draft.require(MediaKind::Image, ME)?;
        let mut pin = json!({
            "board_id": options.board_id,
            "title": clip(draft.title, TITLE_CHARS),
            "description": draft.text,
            "media_source": {"source_type": "image_url", "url": image.url},
        });
        if let Some(link) = &options.link {
            pin["link"] = json!(link);
        }
        if let Some(alt) = &image.alt {
            pin["alt_text"] = json!(alt);
        }
        let request = self
            .0
            .request(Method::POST, &format!("{}/v5/pins", self.base()))?
            .bearer_auth(&account.access)
            .json(&pin);
        let json = self.0.json(request).await?;
        Ok(Published {
            id: id_of(&json, "/id")?,
        })
    }
}
