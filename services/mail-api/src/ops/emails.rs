//! The use cases of the email log: an email with its history, its events, and the log itself.
//!
//! The email log: `GET /api/v1/emails/{id}` (with the first page of its event history),
//! `GET /api/v1/emails/{id}/events` (the history, paged) and `GET /api/v1/emails` (newest
//! first, filtered by status, recipient or site).

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::emails::{self, Email, EmailEvent, ListFilter};
use crate::domain::email_status::EmailStatus;
use crate::domain::error_code::MailErrorCode;
use crate::domain::send_policy::HoldReason;

/// One email of the log.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmailRecord {
    pub id: Uuid,
    pub site_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub to: String,
    pub subject: String,
    pub status: EmailStatus,
    pub provider: Option<String>,
    pub provider_message_id: Option<String>,
    pub open_count: i32,
    pub clicked_urls: Vec<String>,
    pub tags: Vec<String>,
    pub tracking: bool,
    /// Provider calls made so far.
    pub attempts: i32,
    /// The last provider error (a temporary one while retried, the reason once failed).
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub sent_at: Option<DateTime<Utc>>,
    pub last_opened_at: Option<DateTime<Utc>>,
    pub last_clicked_at: Option<DateTime<Utc>>,
    /// Campaign mail: the enrollment and the step it was written for.
    pub enrollment_id: Option<Uuid>,
    pub step_id: Option<Uuid>,
    /// Campaign mail the delivery policy holds (`queued`): why; null once it went to the send
    /// worker, and for transactional mail.
    pub hold_reason: Option<HoldReason>,
    /// When the policy looks at it again; null when it does at its next pass (or, for
    /// `campaign_paused`, once the campaign is active again).
    pub held_until: Option<DateTime<Utc>>,
}

impl From<Email> for EmailRecord {
    fn from(e: Email) -> Self {
        Self {
            id: e.id,
            site_id: e.site_id,
            contact_id: e.contact_id,
            campaign_id: e.campaign_id,
            to: e.to_email,
            subject: e.subject,
            status: e.status,
            provider: e.provider,
            provider_message_id: e.provider_message_id,
            open_count: e.open_count,
            clicked_urls: e.clicked_urls,
            tags: e.tags,
            tracking: e.tracking,
            attempts: e.attempts,
            last_error: e.last_error,
            created_at: e.created_at,
            sent_at: e.sent_at,
            last_opened_at: e.last_opened_at,
            last_clicked_at: e.last_clicked_at,
            enrollment_id: e.enrollment_id,
            step_id: e.step_id,
            hold_reason: e.hold_reason.as_deref().and_then(HoldReason::parse),
            held_until: e.held_until,
        }
    }
}

/// Something that happened to an email. At most 50 events of each kind are stored per email
/// (the first ones): the email's `open_count`, `clicked_urls`, `last_opened_at` and
/// `last_clicked_at` count every open and click.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmailEventRecord {
    pub id: Uuid,
    /// accepted, sent, failed, suppressed, delivered, opened, clicked, bounced, complained or
    /// unsubscribed.
    pub kind: String,
    /// api, worker, tracking or webhook.
    pub source: String,
    /// The event's details (a provider's payload, a clicked URL); null when it has none.
    #[schema(value_type = Option<Object>)]
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

impl From<EmailEvent> for EmailEventRecord {
    fn from(e: EmailEvent) -> Self {
        Self {
            id: e.id,
            kind: e.kind,
            source: e.source,
            data: e.data,
            created_at: e.created_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EmailDetail {
    #[serde(flatten)]
    pub email: EmailRecord,
    /// The first page of its events, oldest first (at most 50).
    pub events: Vec<EmailEventRecord>,
    /// Pass as `cursor` to `GET /api/v1/emails/{id}/events` for the rest; null when `events`
    /// holds them all.
    pub events_next_cursor: Option<String>,
}

/// Events in the detail answer (the default page size of the events route).
const DETAIL_EVENTS: u32 = 50;

fn email_not_found() -> ApiError {
    ApiError::not_found("email not found").with_code(MailErrorCode::EmailNotFound)
}

/// The project's email `id` with the first page of its history (`GET /emails/{id}`).
pub async fn get_email(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<EmailDetail, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let email = emails::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(email_not_found)?;
    let rows = emails::events(
        &mut conn,
        project_id,
        id,
        None,
        i64::from(DETAIL_EVENTS) + 1,
    )
    .await?;
    let rows: Vec<EmailEventRecord> = rows.into_iter().map(Into::into).collect();
    let page = Page::from_rows(rows, DETAIL_EVENTS, |e| e.id);
    Ok(EmailDetail {
        email: email.into(),
        events: page.data,
        events_next_cursor: page.next_cursor,
    })
}

/// A page of the events of the project's email `id`, oldest first
/// (`GET /emails/{id}/events`).
pub async fn list_email_events(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    page: &PageParams,
) -> Result<Page<EmailEventRecord>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    if emails::get(&mut conn, project_id, id).await?.is_none() {
        return Err(email_not_found());
    }
    let rows = emails::events(&mut conn, project_id, id, after, i64::from(limit) + 1).await?;
    let rows: Vec<EmailEventRecord> = rows.into_iter().map(Into::into).collect();
    Ok(Page::from_rows(rows, limit, |e| e.id))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EmailListParams {
    /// 1..=100, default 50.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page; an empty `cursor=` is the first page.
    #[param(schema_with = http_kit::pagination::cursor_schema)]
    pub cursor: Option<String>,
    /// One of the statuses.
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
    /// Recipient address (case-insensitive).
    #[param(format = Email)]
    pub to: Option<String>,
    pub site_id: Option<Uuid>,
}

fn status_schema() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(EmailStatus::ALL.iter().map(|s| s.as_str())))
        .build()
}

impl Validate for EmailListParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.cursor);
        if let Some(to) = &mut self.to {
            crate::ops::input::normalize_email("to", to)?;
        }
        Ok(())
    }
}

/// A page of the project's email log, newest first (`GET /emails`, `list_email_log`).
pub async fn list_emails(
    state: &AppState,
    project_id: Uuid,
    query: &EmailListParams,
) -> Result<Page<EmailRecord>, ApiError> {
    let page = PageParams {
        limit: query.limit,
        cursor: query.cursor.clone(),
    };
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    // The extractor checked it against the documented enum.
    let status = query
        .status
        .as_deref()
        .map(str::parse::<EmailStatus>)
        .transpose()
        .map_err(|_| ApiError::invalid_field("status", "is not an email status"))?;
    let filter = ListFilter {
        status,
        to: query.to.as_deref(),
        site_id: query.site_id,
    };
    let mut conn = store::conn(&state.pool).await?;
    let rows = emails::list(&mut conn, project_id, &filter, before, i64::from(limit) + 1).await?;
    let rows: Vec<EmailRecord> = rows.into_iter().map(EmailRecord::from).collect();
    Ok(Page::from_rows(rows, limit, |e| e.id))
}
