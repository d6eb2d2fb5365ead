//! What is held about one contact: its export (`GET /contacts/{id}/export`,
//! `subscriber_export`) and its timeline of events, emails and conversions
//! (`GET /contacts/{id}/timeline`, `get_subscriber_timeline`).

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::one::{ContactDetail, detail_of};
use super::{ContactKey, find_contact};
use crate::AppState;
use crate::db::contact_tools;
use crate::ops::conversions::Conversion;
use crate::ops::emails::EmailRecord;

/// Most records of each kind in a contact's export.
pub const EXPORT_MAX_RECORDS: i64 = 10_000;

/// A named event of the contact.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactEvent {
    pub id: Uuid,
    pub name: String,
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

/// Everything held about one contact.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactExport {
    pub contact: ContactDetail,
    /// Its events, newest first.
    pub events: Vec<ContactEvent>,
    /// The emails sent to it, newest first.
    pub emails: Vec<EmailRecord>,
    /// Its conversions, newest first.
    pub conversions: Vec<Conversion>,
    /// True when a list holds only its newest 10,000 records.
    pub truncated: bool,
    pub exported_at: DateTime<Utc>,
}

/// The export of the contact named by `key` (`GET /contacts/{id}/export`,
/// `subscriber_export`; admin scope).
pub async fn export_contact(
    state: &AppState,
    project_id: Uuid,
    key: &ContactKey,
) -> Result<ContactExport, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = find_contact(&mut conn, project_id, key).await?;
    let id = row.id;
    let contact = detail_of(&mut conn, row).await?;
    let limit = EXPORT_MAX_RECORDS + 1;
    let mut events = contact_tools::events_of(&mut conn, project_id, id, limit).await?;
    let mut emails = contact_tools::emails_of(&mut conn, project_id, id, limit).await?;
    let mut conversions = contact_tools::conversions_of(&mut conn, project_id, id, limit).await?;
    let max = EXPORT_MAX_RECORDS as usize;
    let truncated = events.len() > max || emails.len() > max || conversions.len() > max;
    events.truncate(max);
    emails.truncate(max);
    conversions.truncate(max);
    Ok(ContactExport {
        contact,
        events: events
            .into_iter()
            .map(|e| ContactEvent {
                id: e.id,
                name: e.name,
                data: e.data,
                created_at: e.created_at,
            })
            .collect(),
        emails: emails.into_iter().map(EmailRecord::from).collect(),
        conversions: conversions.into_iter().map(Conversion::from).collect(),
        truncated,
        exported_at: Utc::now(),
    })
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineKind {
    Event,
    Email,
    Conversion,
}

/// Something that happened to a contact.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineEntry {
    /// The event's, email's or conversion's id.
    pub id: Uuid,
    pub kind: TimelineKind,
    /// When the event or email was recorded, or the conversion attributed.
    pub at: DateTime<Utc>,
    /// The event's name or the conversion's event; null for an email.
    pub name: Option<String>,
    /// The event's data or the conversion's metadata; null for an email.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// An email's subject.
    pub subject: Option<String>,
    /// An email's status.
    pub status: Option<String>,
    /// The email's or conversion's campaign.
    pub campaign_id: Option<Uuid>,
    /// A conversion's revenue and currency.
    pub revenue: Option<f64>,
    pub currency: Option<String>,
}

/// A page of the timeline of the contact named by `key`, newest first
/// (`GET /contacts/{id}/timeline`, `get_subscriber_timeline`).
pub async fn contact_timeline(
    state: &AppState,
    project_id: Uuid,
    key: &ContactKey,
    page: &PageParams,
) -> Result<Page<TimelineEntry>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let contact = find_contact(&mut conn, project_id, key).await?;
    let rows = contact_tools::timeline(
        &mut conn,
        project_id,
        contact.id,
        before,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(|r| TimelineEntry {
            id: r.id,
            kind: match r.kind.as_str() {
                "email" => TimelineKind::Email,
                "conversion" => TimelineKind::Conversion,
                _ => TimelineKind::Event,
            },
            at: r.at,
            name: r.name,
            data: r.data,
            subject: r.subject,
            status: r.status,
            campaign_id: r.campaign_id,
            revenue: r.revenue,
            currency: r.currency,
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |e| e.id))
}
