//! Facebook Pages: Facebook Login's OAuth dialog (`/dialog/oauth` on www.facebook.com; the
//! state binds the callback, the manual flow has no PKCE), the code exchanged at
//! `GET /oauth/access_token`, the short-lived user token exchanged for a long-lived one
//! (`grant_type=fb_exchange_token`), and the page's own token read from `GET /me/accounts`:
//! the first page the person granted, whose id is the account's handle. A page token got from
//! a long-lived user token does not expire, so there is nothing to refresh: a revoked one
//! (error 190) asks for connecting again. Posts go to `POST /{page-id}/feed` (`message`), or,
//! when the post carries an image, to `POST /{page-id}/photos` (`url`, `caption`); videos are
//! not published here (the text is). The Graph API has no idempotency key.

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::Platform::Facebook as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, MediaKind, PlatformError, Published,
    SocialClient, TextRules, Tokens, expiry_in, form, graph_sorted, id_of,
};

const DEFAULT_BASE: &str = "https://graph.facebook.com";
const DEFAULT_AUTHORIZE: &str = "https://www.facebook.com/v21.0/dialog/oauth";
/// The Graph API version the requests are written for.
pub const VERSION: &str = "v21.0";
const SCOPES: &str = "pages_show_list,pages_read_engagement,pages_manage_posts";

/// 63,206 characters a post; a link is text like any other.
pub const RULES: TextRules = TextRules {
    max_chars: 63_206,
    link_chars: None,
    links_inline: true,
};

pub struct Facebook<'a>(pub &'a SocialClient);

impl Facebook<'_> {
    fn api(&self, path: &str) -> String {
        format!("{}/{VERSION}/{path}", self.0.base(ME, DEFAULT_BASE))
    }

    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, PlatformError> {
        let url = format!("{}?{}", self.api(path), form(query)?);
        graph_sorted(self.0.raw(self.0.request(Method::GET, &url)?).await?)
    }
}

impl Adapter for Facebook<'_> {
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
        let short = self
            .get(
                "oauth/access_token",
                &[
                    ("client_id", &settings.client_id),
                    ("client_secret", &settings.client_secret),
                    ("redirect_uri", redirect_uri),
                    ("code", code),
                ],
            )
            .await?;
        let short = short
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                PlatformError::Rejected("the token answer has no access_token".into())
            })?;
        let long = self
            .get(
                "oauth/access_token",
                &[
                    ("grant_type", "fb_exchange_token"),
                    ("client_id", &settings.client_id),
                    ("client_secret", &settings.client_secret),
                    ("fb_exchange_token", short),
                ],
            )
            .await?;
        let user_token = long
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                PlatformError::Rejected("the token answer has no access_token".into())
            })?;
        let request = self
            .0
            .request(
                Method::GET,
                &format!("{}?fields=id,name,access_token", self.api("me/accounts")),
            )?
            .bearer_auth(user_token);
        let pages = graph_sorted(self.0.raw(request).await?)?;
        let page = pages
            .pointer("/data/0")
            .ok_or_else(|| PlatformError::Rejected("no Facebook page was granted".into()))?;
        let access = page
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| PlatformError::Rejected("the page has no access_token".into()))?;
        Ok(Tokens {
            access: access.to_owned(),
            refresh: None,
            // A page token of a long-lived user token has no expiry; one given is kept.
            expires_at: expiry_in(page),
            handle: Some(id_of(page, "/id")?),
        })
    }

    async fn refresh(&self, _account: &Account) -> Result<Tokens, PlatformError> {
        Err(PlatformError::Unauthorized)
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Facebook connects through GET /api/integrations/social/facebook/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let page = account
            .handle
            .as_deref()
            .ok_or_else(|| PlatformError::Rejected("the account has no page".into()))?;
        let (path, body) = match draft.first(MediaKind::Image) {
            Some(image) => (
                format!("{page}/photos"),
                form(&[("url", &image.url), ("caption", draft.text)])?,
            ),
            None => (format!("{page}/feed"), form(&[("message", draft.text)])?),
        };
        let request = self
            .0
            .request(Method::POST, &self.api(&path))?
            .bearer_auth(&account.access)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        let json = graph_sorted(self.0.raw(request).await?)?;
        // A photo answers its id and its post's (`post_id`): the post is what was published.
        let id = id_of(&json, "/post_id").or_else(|_| id_of(&json, "/id"))?;
        Ok(Published { id })
    }
}
