//! GDPR: erasing a contact's personal data (`DELETE /contacts/{id}/personal-data`,
//! `delete_subscriber_data`) and the log of erasures (`GET /gdpr/deletion-log`,
//! `list_deletion_log`).
//!
//! An erasure removes the contact, its site subscriptions, campaign enrollments and events;
//! scrubs the emails sent to it (by contact or by address: recipient, subject, bodies,
//! headers, reply-to, clicked links, idempotency key, provider message id and last error
//! become `[erased]` or empty; their history entries lose their details; provider webhook
//! payloads about them are replaced); keeps its conversions without their contact and
//! metadata; and deletes stored idempotent answers that named it. What the project's figures
//! count stays as anonymous rows: email statuses, open counts and times, conversion amounts.
//! So analytics' delivery, conversion and revenue figures do not change; the subscriber
//! counts, which count the contacts a site holds, no longer count the erased one. A
//! suppression of the address is kept: it is what keeps mail from being sent to it again.
//! Emails to the contact still waiting to be sent become `failed`.
//!
//! The log entry holds no personal data: the contact's former id, a salted hash of its
//! address (hex SHA-256 of `<project id>:<email>`, so an operator who is given the address can
//! recognise the entry), the counts erased, the API key that asked and the time.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::gdpr::{self, Erasure, ErasureCounts, LogEntry};
use crate::domain::error_code::MailErrorCode;

fn contact_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("contact {id} not found")).with_code(MailErrorCode::ContactNotFound)
}

/// One erasure, as logged.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeletionLogEntry {
    pub id: Uuid,
    /// The erased contact's former id.
    pub contact_id: Uuid,
    /// Hex SHA-256 of `<project id>:<email>` (the address as stored: trimmed, lowercased).
    pub email_sha256: String,
    pub erased: ErasureCounts,
    /// The API key that asked for the erasure.
    pub key_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

impl From<LogEntry> for DeletionLogEntry {
    fn from(row: LogEntry) -> Self {
        Self {
            id: row.id,
            contact_id: row.contact_id,
            email_sha256: row.email_sha256,
            erased: serde_json::from_value(row.erased).unwrap_or_default(),
            key_id: row.key_id,
            created_at: row.created_at,
        }
    }
}

/// What an erasure did.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErasureReport {
    #[serde(flatten)]
    pub entry: DeletionLogEntry,
    /// The project suppresses the address, and keeps that suppression (it is what stops mail
    /// to the address); remove it with `DELETE /suppressions/{email}` if that is wanted too.
    pub suppression_kept: bool,
}

/// The contact an erasure would act on, and what it would erase.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErasurePreview {
    pub contact_id: Uuid,
    pub email: String,
    pub would_erase: ErasureCounts,
}

/// What erasing the project's contact `contact_id` would erase (the first call of
/// `delete_subscriber_data`); 404 `CONTACT_NOT_FOUND` when it has none of this id.
pub async fn erasure_preview(
    state: &AppState,
    project_id: Uuid,
    contact_id: Uuid,
) -> Result<ErasurePreview, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let subject = gdpr::subject(&mut conn, project_id, contact_id, false)
        .await?
        .ok_or_else(|| contact_not_found(contact_id))?;
    let would_erase = gdpr::preview(&mut conn, project_id, &subject).await?;
    Ok(ErasurePreview {
        contact_id: subject.id,
        email: subject.email,
        would_erase,
    })
}

/// Erases the project's contact `contact_id` (`DELETE /contacts/{id}/personal-data`,
/// `delete_subscriber_data`): 404 `CONTACT_NOT_FOUND` when it has none of this id (erased
/// already included).
pub async fn erase_contact(
    state: &AppState,
    caller: &Caller,
    contact_id: Uuid,
) -> Result<ErasureReport, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    match gdpr::erase(&mut conn, caller.owner_id, contact_id, caller.key_id).await? {
        Erasure::Done {
            entry,
            counts,
            suppression_kept,
        } => {
            let mut entry = DeletionLogEntry::from(*entry);
            entry.erased = counts;
            Ok(ErasureReport {
                entry,
                suppression_kept,
            })
        }
        Erasure::NotFound => Err(contact_not_found(contact_id)),
    }
}

/// A page of the project's erasures, newest first (`GET /gdpr/deletion-log`,
/// `list_deletion_log`).
pub async fn list_deletion_log(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<DeletionLogEntry>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = gdpr::log(&mut conn, project_id, before, i64::from(limit) + 1).await?;
    let rows: Vec<DeletionLogEntry> = rows.into_iter().map(DeletionLogEntry::from).collect();
    Ok(Page::from_rows(rows, limit, |e| e.id))
}
