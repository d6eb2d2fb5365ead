//! The use cases of the project's notifications: listing them and marking them read.
//!
//! The project's notifications: `GET /api/v1/notifications` (newest first) and
//! `POST /api/v1/notifications/read`.
//!
//! What produces one (its `kind`): an API key created (`api_key.created`) or revoked
//! (`api_key.revoked`); a provider reporting that an email bounced (`email.bounced`) or drew a
//! complaint (`email.complained`), which also suppressed the address; someone invited to the
//! team (`team_member.invited`) or joining it (`team_member.joined`); a contact's personal data erased (`contact.erased`);
//! a migration from another email platform ending (`platform_import.completed`,
//! `platform_import.failed`). Each is
//! written in the transaction of what it reports. Notifications about emails name the email
//! and its site, never the recipient's address.

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::notifications::{self, Notification as Row};

/// Most ids one request marks.
const IDS_MAX: usize = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct Notification {
    pub id: Uuid,
    /// `api_key.created`, `api_key.revoked`, `email.bounced`, `email.complained`,
    /// `team_member.invited`, `team_member.joined`, `contact.erased`,
    /// `platform_import.completed` or `platform_import.failed`.
    pub kind: String,
    /// One line saying what happened.
    pub title: String,
    /// The ids of what it is about (`key_id`, `email_log_id` and `site_id`, `member_id`,
    /// `deletion_id` and `contact_id`, `import_id`) and a few details.
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: DateTime<Utc>,
    /// When it was marked read; null: unread.
    pub read_at: Option<DateTime<Utc>>,
}

impl From<Row> for Notification {
    fn from(row: Row) -> Self {
        Self {
            id: row.id,
            kind: row.kind,
            title: row.title,
            data: row.data,
            created_at: row.created_at,
            read_at: row.read_at,
        }
    }
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotificationFilter {
    /// Only unread notifications (default false: all).
    pub unread: Option<bool>,
}

impl Validate for NotificationFilter {}

/// A page of the project's notifications, newest first (`GET /notifications`,
/// `list_notifications`).
pub async fn list_notifications(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &NotificationFilter,
) -> Result<Page<Notification>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = notifications::list(
        &mut conn,
        project_id,
        filter.unread.unwrap_or(false),
        before,
        i64::from(limit) + 1,
    )
    .await?;
    let rows: Vec<Notification> = rows.into_iter().map(Notification::from).collect();
    Ok(Page::from_rows(rows, limit, |n| n.id))
}

fn ids_schema() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            utoipa::openapi::schema::Type::Array,
            utoipa::openapi::schema::Type::Null,
        ]))
        .items(
            utoipa::openapi::schema::ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::Type::String)
                .format(Some(utoipa::openapi::schema::SchemaFormat::KnownFormat(
                    utoipa::openapi::KnownFormat::Uuid,
                ))),
        )
        .min_items(Some(1))
        .max_items(Some(IDS_MAX))
        .description(Some(
            "The notifications to mark read: 1..=100 ids. Ids that are not the project's \
             unread notifications are passed over. Absent: every unread notification.",
        ))
        .build()
}

/// Which notifications to mark read. Unknown fields are refused.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct MarkRead {
    #[schema(required = false, schema_with = ids_schema)]
    pub ids: Option<Vec<Uuid>>,
}

impl Validate for MarkRead {}

#[derive(Debug, Serialize, ToSchema)]
pub struct MarkedRead {
    /// How many notifications changed from unread to read.
    pub marked: i64,
    /// How many of the project's notifications are still unread.
    pub unread: i64,
}

/// Marks the project's notifications `ids` (all unread ones when absent) read
/// (`POST /notifications/read`, `mark_notifications_read`).
pub async fn mark_notifications_read(
    state: &AppState,
    project_id: Uuid,
    req: &MarkRead,
) -> Result<MarkedRead, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let marked = notifications::mark_read(&mut conn, project_id, req.ids.as_deref()).await?;
    let unread = notifications::unread_count(&mut conn, project_id).await?;
    Ok(MarkedRead {
        marked: marked as i64,
        unread,
    })
}
