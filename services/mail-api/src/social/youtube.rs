//! YouTube: Google's OAuth 2 with PKCE (`/o/oauth2/v2/auth` on accounts.google.com with
//! `access_type=offline` and `prompt=consent` for a refresh token; codes and refresh tokens
//! exchanged at `POST /token` on oauth2.googleapis.com, its `token_url`), the channel from
//! `GET /youtube/v3/channels?part=snippet&mine=true`. A video is uploaded with the YouTube Data
//! API v3's resumable upload: `POST /upload/youtube/v3/videos?uploadType=resumable&part=
//! snippet,status` with the video's metadata (the post's title, 100 characters, and its text
//! as the description, 5,000 bytes) answers the session's address in `Location`; the bytes of
//! the post's first video, fetched through the SSRF-safe client (at most
//! `MAIL_SOCIAL__MEDIA_MAX_BYTES`), are then `PUT` there in one request, answered with the
//! video (its `id` stored). Errors are Google's `{"error": {"code", "message"}}`.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Platform::Youtube as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, MediaKind, PlatformError, Published,
    SocialClient, TextRules, Tokens, clip, form, id_of, oauth_tokens,
};

const DEFAULT_BASE: &str = "https://www.googleapis.com";
const DEFAULT_AUTHORIZE: &str = "https://accounts.google.com/o/oauth2/v2/auth";
const DEFAULT_TOKEN: &str = "https://oauth2.googleapis.com/token";
const SCOPES: &str = "https://www.googleapis.com/auth/youtube.upload https://www.googleapis.com/auth/youtube.readonly";
const TITLE_CHARS: usize = 100;
const DESCRIPTION_BYTES: usize = 5000;

/// A description of 5,000 bytes (counted here in characters, and cut to the bytes when sent).
pub const RULES: TextRules = TextRules {
    max_chars: 5000,
    link_chars: None,
    links_inline: true,
};

pub struct Youtube<'a>(pub &'a SocialClient);

/// `text` cut to at most `max` bytes at a character boundary; YouTube refuses `<` and `>`.
fn description(text: &str, max: usize) -> String {
    let text = text.replace(['<', '>'], "");
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

impl Youtube<'_> {
    fn base(&self) -> String {
        self.0.base(ME, DEFAULT_BASE)
    }

    async fn token(&self, pairs: &[(&str, &str)]) -> Result<Tokens, PlatformError> {
        let url = self.0.configured(ME, |s| &s.token_url, DEFAULT_TOKEN);
        let request = self
            .0
            .request(Method::POST, &url)?
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(pairs)?);
        oauth_tokens(&self.0.json(request).await?)
    }

    async fn channel(&self, access: &str) -> Option<String> {
        let url = format!("{}/youtube/v3/channels?part=snippet&mine=true", self.base());
        let request = self.0.request(Method::GET, &url).ok()?.bearer_auth(access);
        let json = self.0.json(request).await.ok()?;
        json.pointer("/items/0/snippet/title")
            .or_else(|| json.pointer("/items/0/id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

impl Adapter for Youtube<'_> {
    fn authorize_url(&self, req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        self.0.code_authorization(
            ME,
            DEFAULT_AUTHORIZE,
            SCOPES,
            req,
            &[
                ("code_challenge", req.code_challenge),
                ("code_challenge_method", "S256"),
                ("access_type", "offline"),
                ("prompt", "consent"),
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
            ])
            .await?;
        tokens.handle = self.channel(&tokens.access).await;
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
        // Google gives no new refresh token on a refresh: the one we have stays.
        if tokens.refresh.is_none() {
            tokens.refresh = Some(refresh.clone());
        }
        Ok(tokens)
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "YouTube connects through GET /api/integrations/social/youtube/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let video = draft.require(MediaKind::Video, ME)?;
        let (bytes, content_type) = self.0.fetch_media(&video.url).await?;
        let content_type = if content_type.starts_with("video/") {
            content_type
        } else {
            "video/*".to_owned()
        };
        let url = format!(
            "{}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status",
            self.base()
        );
        let title = clip(&draft.title.replace(['<', '>'], ""), TITLE_CHARS);
        let request = self
            .0
            .request(Method::POST, &url)?
            .bearer_auth(&account.access)
            .header("x-upload-content-length", bytes.len().to_string())
            .header("x-upload-content-type", &content_type)
            .json(&json!({
                "snippet": {
                    "title": title,
                    "description": description(draft.text, DESCRIPTION_BYTES),
                },
                "status": {"privacyStatus": "public"},
            }));
        let (_, headers) = self.0.send(request).await?;
        let session = headers
            .get("location")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| PlatformError::Rejected("the upload answer has no Location".into()))?
            .to_owned();
        let request = self
            .0
            .request(Method::PUT, &session)?
            .bearer_auth(&account.access)
            .header("content-type", content_type)
            .body(bytes);
        let json = self.0.json(request).await?;
        Ok(Published {
            id: id_of(&json, "/id")?,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_description_is_cut_at_a_character_boundary() {
        assert_eq!(super::description("héllo <b>", 2), "h");
        assert_eq!(super::description("a <b> c", 100), "a b c");
    }
}
