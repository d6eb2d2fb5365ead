//! Telegram: a bot token (checked with `getMe`) and the chat it posts to, messages sent with
//! `sendMessage`. The token is part of every URL: errors are described without their URL.

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Platform::Telegram as ME;
use super::{
    Account, Adapter, AuthorizeRequest, Credentials, Draft, PlatformError, Published, SocialClient,
    TextRules, Tokens,
};

const DEFAULT_BASE: &str = "https://api.telegram.org";

/// 4,096 characters a message.
pub const RULES: TextRules = TextRules {
    max_chars: 4096,
    link_chars: None,
    links_inline: true,
};

pub struct Telegram<'a>(pub &'a SocialClient);

impl Telegram<'_> {
    fn url(&self, token: &str, method: &str) -> String {
        format!("{}/bot{token}/{method}", self.0.base(ME, DEFAULT_BASE))
    }

    /// Telegram says `ok: false` with a reason; a 429 carries `parameters.retry_after`.
    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, PlatformError> {
        let json = self.0.json(request).await?;
        if json.get("ok").and_then(Value::as_bool) == Some(true) {
            Ok(json)
        } else {
            Err(PlatformError::Rejected(
                "Telegram answered ok: false".into(),
            ))
        }
    }
}

impl Adapter for Telegram<'_> {
    fn authorize_url(&self, _req: &AuthorizeRequest<'_>) -> Result<String, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Telegram connects with a bot token: POST /api/v1/social/accounts/telegram".into(),
        ))
    }

    async fn exchange(&self, _: &str, _: &str, _: &str) -> Result<Tokens, PlatformError> {
        Err(PlatformError::NotConfigured(
            "Telegram has no authorization code".into(),
        ))
    }

    /// A bot token does not expire: a refused one stays refused.
    async fn refresh(&self, _account: &Account) -> Result<Tokens, PlatformError> {
        Err(PlatformError::Unauthorized)
    }

    async fn connect(&self, credentials: &Credentials) -> Result<Tokens, PlatformError> {
        let Credentials::Telegram { bot_token, chat_id } = credentials else {
            return Err(PlatformError::Rejected("not Telegram credentials".into()));
        };
        let request = self.0.request(Method::GET, &self.url(bot_token, "getMe"))?;
        self.call(request).await.map_err(|e| match e {
            PlatformError::Unauthorized => {
                PlatformError::Rejected("the bot token was refused".into())
            }
            other => other,
        })?;
        Ok(Tokens {
            access: bot_token.clone(),
            refresh: None,
            expires_at: None,
            handle: Some(chat_id.clone()),
        })
    }

    async fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
        _key: Uuid,
    ) -> Result<Published, PlatformError> {
        let text = draft.text;
        let chat = account
            .handle
            .as_deref()
            .ok_or_else(|| PlatformError::Rejected("the account has no chat".into()))?;
        let request = self
            .0
            .request(Method::POST, &self.url(&account.access, "sendMessage"))?
            .json(&json!({"chat_id": chat, "text": text}));
        let json = self.call(request).await?;
        let id = json
            .pointer("/result/message_id")
            .and_then(Value::as_i64)
            .ok_or_else(|| PlatformError::Rejected("the answer has no message_id".into()))?;
        Ok(Published {
            id: format!("{chat}/{id}"),
        })
    }
}
