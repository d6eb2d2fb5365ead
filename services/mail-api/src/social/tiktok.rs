//! TikTok (Content Posting API): OAuth v2 with PKCE (`/v2/auth/authorize/` on www.tiktok.com,
//! the client named by its `client_key`; TikTok spells the S256 challenge in hexadecimal, not
//! base64url), codes and refresh tokens exchanged at `POST /v2/oauth/token/` on
//! open.tiktokapis.com (the account's `open_id` is its handle). Publishing asks which privacy
//! levels the creator may post with (`POST /v2/post/publish/creator_info/query/`: public when
//! offered, else the first, as an unaudited client may only post privately), then
//! `POST /v2/post/publish/video/init/` with `source_info {source: PULL_FROM_URL, video_url}`:
//! TikTok fetches the post's first video itself (its address's domain must be verified with
//! TikTok) and answers a `publish_id`, stored as the post's id there. Errors are
//! `{"error": {"code", "message", "log_id"}}`, `code` `ok` when there is none.

use data_encoding::HEXLOWER;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Platform::Tiktok as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, MediaKind, PlatformError, Published,
    SocialClient, TextRules, Tokens, authorize_address, form, id_of, oauth_tokens,
};

const DEFAULT_BASE: &str = "https://open.tiktokapis.com";
const DEFAULT_AUTHORIZE: &str = "https://www.tiktok.com/v2/auth/authorize/";
const SCOPES: &str = "user.info.basic,video.publish";

/// 2,200 characters a caption; links in it are not clickable, so they stay at the end.
pub const RULES: TextRules = TextRules {
    max_chars: 2200,
    link_chars: None,
    links_inline: false,
};

pub struct Tiktok<'a>(pub &'a SocialClient);

/// TikTok's refusal in an answer that says one (`error.code` other than `ok`).
fn refusal(json: &Value) -> Option<PlatformError> {
    let code = json.pointer("/error/code").and_then(Value::as_str)?;
    if code == "ok" {
        return None;
    }
    let message = json
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("");
    Some(match code {
        "access_token_invalid" => PlatformError::Unauthorized,
        "rate_limit_exceeded" | "spam_risk_too_many_posts" => {
            PlatformError::RateLimited(std::time::Duration::from_secs(60))
        }
        _ => PlatformError::Rejected(format!(
            "TikTok refused: {code}: {}",
            message.chars().take(300).collect::<String>()
        )),
    })
}

impl Tiktok<'_> {
    fn base(&self) -> String {
        self.0.base(ME, DEFAULT_BASE)
    }

    async fn token(&self, pairs: &[(&str, &str)]) -> Result<Tokens, PlatformError> {
        let url = self.0.configured(
            ME,
            |s| &s.token_url,
            &format!("{}/v2/oauth/token/", self.base()),
        );
        let request = self
            .0
            .request(Method::POST, &url)?
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(pairs)?);
        let json = self.0.json(request).await?;
        // A refused grant is answered 200 with `error` and `error_description`.
        if let Some(error) = json.get("error").and_then(Value::as_str) {
            let reason = json
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or(error);
            return Err(PlatformError::Rejected(format!("TikTok refused: {reason}")));
        }
        let mut tokens = oauth_tokens(&json)?;
        tokens.handle = json
            .get("open_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(tokens)
    }

    /// A JSON call of the Content Posting API.
    async fn call(
        &self,
        account: &Account,
        path: &str,
        body: &Value,
    ) -> Result<Value, PlatformError> {
        let request = self
            .0
            .request(Method::POST, &format!("{}{path}", self.base()))?
            .bearer_auth(&account.access)
            .header("content-type", "application/json; charset=UTF-8")
            .json(body);
        let answer = self.0.raw(request).await?;
        if answer.status != 429
            && let Some(error) = refusal(&answer.json)
        {
            return Err(error);
        }
        Ok(answer.sorted()?.0)
    }
}

impl Adapter for Tiktok<'_> {
    fn authorize_url(&self, req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        let settings = self.0.settings.platform(ME);
        let base = self
            .0
            .configured(ME, |s| &s.authorize_url, DEFAULT_AUTHORIZE);
        let challenge = HEXLOWER.encode(&store::sha256(req.code_verifier.as_bytes()));
        authorize_address(
            &base,
            &[
                ("client_key", &settings.client_id),
                ("response_type", "code"),
                ("scope", SCOPES),
                ("redirect_uri", req.redirect_uri),
                ("state", req.state),
                ("code_challenge", &challenge),
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
        self.token(&[
            ("client_key", &settings.client_id),
            ("client_secret", &settings.client_secret),
            ("code", code),
            ("grant_type", "authorization_code"),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ])
        .await
    }

    async fn refresh(&self, account: &Account) -> Result<Tokens, PlatformError> {
        let Some(refresh) = &account.refresh else {
            return Err(PlatformError::Unauthorized);
        };
        let settings = self.0.settings.platform(ME);
        let mut tokens = self
            .token(&[
                ("client_key", &settings.client_id),
                ("client_secret", &settings.client_secret),
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
            ])
            .await?;
        if tokens.handle.is_none() {
            tokens.handle = account.handle.clone();
        }
        if tokens.refresh.is_none() {
            tokens.refresh = Some(refresh.clone());
        }
        Ok(tokens)
    }

    async fn connect(&self, _credentials: &Credentials) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "TikTok connects through GET /api/integrations/social/tiktok/connect".into(),
        ))
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let video = draft.require(MediaKind::Video, ME)?;
        let creator = self
            .call(account, "/v2/post/publish/creator_info/query/", &json!({}))
            .await?;
        let levels: Vec<&str> = creator
            .pointer("/data/privacy_level_options")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let privacy = if levels.contains(&"PUBLIC_TO_EVERYONE") {
            "PUBLIC_TO_EVERYONE"
        } else {
            levels.first().copied().unwrap_or("SELF_ONLY")
        };
        let json = self
            .call(
                account,
                "/v2/post/publish/video/init/",
                &json!({
                    "post_info": {"title": draft.text, "privacy_level": privacy},
                    "source_info": {"source": "PULL_FROM_URL", "video_url": video.url},
                }),
            )
            .await?;
        Ok(Published {
            id: id_of(&json, "/data/publish_id")?,
        })
    }
}
