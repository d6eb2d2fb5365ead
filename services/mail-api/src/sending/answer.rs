//! What a send comes to: the worker's result for one email, and the answer `POST /send` gives
//! (again, on a replay of its key).

use http_kit::ApiError;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::emails::{Email, Finished};
use crate::domain::email_status::EmailStatus;
use crate::domain::error_code::MailErrorCode;

/// What the send worker answers for one email (also its RPC reply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendResult {
    pub id: Uuid,
    pub to: String,
    /// `sent`, `failed` or `suppressed`; `accepted` or `queued` while another delivery of the
    /// job is sending it.
    pub status: EmailStatus,
    pub provider_message_id: Option<String>,
    pub error: Option<String>,
}

impl SendResult {
    /// The result a row stands for: `sent` once the provider took it (later events do not
    /// change what the send answered), else its own status.
    pub fn of(row: &Email) -> Self {
        Self::of_finished(Finished {
            id: row.id,
            to_email: row.to_email.clone(),
            status: row.status,
            provider_message_id: row.provider_message_id.clone(),
            last_error: row.last_error.clone(),
        })
    }

    /// The result of an email the worker has just moved.
    pub fn of_finished(row: Finished) -> Self {
        let status = if row.status.is_accepted_by_provider() {
            EmailStatus::Sent
        } else {
            row.status
        };
        Self {
            id: row.id,
            to: row.to_email,
            status,
            provider_message_id: row.provider_message_id,
            error: row.last_error.filter(|_| status == EmailStatus::Failed),
        }
    }

    /// The answer this result gives: sent or queued, or the 422 of a send that will not
    /// happen.
    pub fn into_answer(self) -> Result<SendResponse, ApiError> {
        let status = match self.status {
            EmailStatus::Sent => EmailStatus::Sent,
            EmailStatus::Suppressed => return Err(suppressed(&self.to, Some(self.id))),
            EmailStatus::Failed => return Err(provider_rejected(self.id, self.error.as_deref())),
            _ => EmailStatus::Queued,
        };
        Ok(SendResponse {
            id: self.id,
            provider_message_id: self.provider_message_id,
            to: self.to,
            status,
        })
    }
}

/// The answer of `POST /send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SendResponse {
    /// The email log id.
    pub id: Uuid,
    /// The provider's id of the message; null while queued.
    pub provider_message_id: Option<String>,
    pub to: String,
    /// `sent` (200) or `queued` (202).
    #[schema(value_type = String, example = "sent")]
    pub status: EmailStatus,
}

impl SendResponse {
    pub fn queued(id: Uuid, to: &str) -> Self {
        Self {
            id,
            provider_message_id: None,
            to: to.to_owned(),
            status: EmailStatus::Queued,
        }
    }

    /// Whether the provider took the message (200), rather than it being queued (202).
    pub fn is_sent(&self) -> bool {
        self.status == EmailStatus::Sent
    }

    /// The answer the first request with this email's key was given: 202 `queued` when it
    /// was, whatever the email became since; otherwise what the worker's result said.
    pub fn first_for(row: &Email) -> Result<Self, ApiError> {
        if row.answered_queued {
            return Ok(Self::queued(row.id, &row.to_email));
        }
        SendResult::of(row).into_answer()
    }
}

/// 422 `SUPPRESSED_CONTACT`: nothing is sent to this address (`id`: the email, once written).
pub fn suppressed(to: &str, id: Option<Uuid>) -> ApiError {
    let mut details = serde_json::json!({"to": to});
    if let Some(id) = id {
        details["id"] = id.to_string().into();
    }
    ApiError::unprocessable(format!("{to} is suppressed: nothing is sent to it"))
        .with_code(MailErrorCode::SuppressedContact)
        .with_details(details)
}

/// 422 `PROVIDER_REJECTED`: the provider refused the message for good.
fn provider_rejected(id: Uuid, reason: Option<&str>) -> ApiError {
    ApiError::unprocessable(format!(
        "the provider refused the message: {}",
        reason.unwrap_or("no reason given")
    ))
    .with_code(MailErrorCode::ProviderRejected)
    .with_details(serde_json::json!({"id": id}))
}
