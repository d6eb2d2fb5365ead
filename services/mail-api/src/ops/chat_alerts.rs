//! The use cases of chat alerts on bounces and complaints.
//!
//! Chat alerts on bounces and complaints: `GET`/`PUT`/`DELETE /api/v1/chat-alerts`, the
//! project's Slack-compatible incoming-webhook URL (stored sealed; only its host is shown).
//! The messages are batched: at most one a minute ([`crate::outbound::chat`]).

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::chat_alerts;

#[derive(Debug, Serialize, ToSchema)]
pub struct ChatAlerts {
    /// Whether the project has a chat-alert URL.
    pub configured: bool,
    /// The URL's host (the URL itself is a secret and is never shown again).
    pub host: Option<String>,
    /// When the last message went out.
    pub last_sent_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl From<Option<chat_alerts::ChatAlerts>> for ChatAlerts {
    fn from(row: Option<chat_alerts::ChatAlerts>) -> Self {
        Self {
            configured: row.is_some(),
            host: row.as_ref().map(|r| r.url_host.clone()),
            last_sent_at: row.as_ref().and_then(|r| r.last_sent_at),
            updated_at: row.map(|r| r.updated_at),
        }
    }
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PutChatAlerts {
    /// A Slack-compatible incoming-webhook URL (it takes `{"text": …}`): absolute `http` or
    /// `https` on the public internet, at most 2,000 characters.
    #[schema(min_length = 1, max_length = 2000)]
    pub url: String,
}

impl Validate for PutChatAlerts {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.url = self.url.trim().to_owned();
        Ok(())
    }
}

/// The project's chat alerts (`GET /chat-alerts`).
pub async fn get_chat_alerts(state: &AppState, project_id: Uuid) -> Result<ChatAlerts, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = chat_alerts::get(&mut conn, project_id).await?;
    Ok(ChatAlerts::from(row))
}

/// Stops the project's chat alerts, if any (`DELETE /chat-alerts`).
pub async fn delete_chat_alerts(state: &AppState, project_id: Uuid) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    chat_alerts::delete(&mut conn, project_id).await?;
    Ok(())
}

/// Sends the project's alerts to the chat webhook `url` (stored sealed; only its host is
/// shown) (`PUT /chat-alerts`).
pub async fn put_chat_alerts(
    state: &AppState,
    project_id: Uuid,
    url: &str,
) -> Result<ChatAlerts, ApiError> {
    let parsed = delivery::safe_http::check_url(url, state.outbound.target_policy())
        .map_err(|e| ApiError::invalid_field("url", &e.to_string()))?;
    let host = parsed.host_str().unwrap_or_default().to_owned();
    let sealed = state
        .kek
        .seal(url.as_bytes(), &chat_alerts::seal_context(project_id));
    let mut conn = store::conn(&state.pool).await?;
    let row = chat_alerts::put(&mut conn, project_id, &sealed, &host).await?;
    Ok(ChatAlerts::from(Some(row)))
}
