//! Named events: recording one and enrolling its contact in the triggered campaigns
//! listening for it (`POST /events`), and the event log (`GET /events`, `list_event_log`).

use auth::Caller;
use chrono::{DateTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Pool;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::campaigns;
use crate::db::enrollments::{self, EnrollSource};
use crate::db::events;
use crate::db::insights::{self, EventFilter};
use crate::domain::error_code::MailErrorCode;
use crate::flows;
use crate::ops::contacts::create::find_or_create_minimal;
use crate::ops::input::normalize_email;

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EventRequest {
    /// Required. A contact is created (email only, source `api`) when the project has none
    /// with this address.
    #[schema(format = Email)]
    pub email: String,
    /// Required, 1..=200 characters, not blank (stored trimmed); matched exactly against the
    /// `trigger_event_name` of the project's active triggered campaigns.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub event: String,
    /// Stored with the event.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
}

impl Validate for EventRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)?;
        http_kit::request::trim(&mut self.event);
        Ok(())
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventTracked {
    pub event: String,
    pub contact_id: Uuid,
    /// `true` when this call created the contact.
    pub contact_created: bool,
    pub enrollments_created: usize,
    /// Names of the campaigns this call enrolled the contact in.
    pub enrolled_campaigns: Vec<String>,
    /// Names of the matching campaigns the contact was already enrolled in (any enrollment
    /// status but `exited`).
    pub skipped_campaigns: Vec<String>,
}

/// Records the event and enrolls its contact (created with only its email when missing, 422
/// `PLAN_LIMIT` past the plan's limit) in the active triggered campaigns listening for it
/// (`POST /events`), in one transaction.
pub async fn track_event(
    pool: &Pool,
    caller: &Caller,
    req: &EventRequest,
) -> Result<EventTracked, ApiError> {
    let project_id = caller.owner_id;
    let empty = Value::Object(Default::default());
    let mut conn = store::conn(pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let (contact, contact_created) = find_or_create_minimal(conn, caller, &req.email).await?;
        let data = req.data.as_ref().unwrap_or(&empty);
        let fired = fire(conn, project_id, contact.id, &req.event, data).await?;
        Ok(EventTracked {
            event: req.event.clone(),
            contact_id: contact.id,
            contact_created,
            enrollments_created: fired.enrolled_campaigns.len(),
            enrolled_campaigns: fired.enrolled_campaigns,
            skipped_campaigns: fired.skipped_campaigns,
        })
    })
    .await
}

/// What [`fire`] did: the names of the campaigns it enrolled the contact in, and of those the
/// contact was in already.
#[derive(Debug, Default)]
pub struct Fired {
    pub enrolled_campaigns: Vec<String>,
    pub skipped_campaigns: Vec<String>,
}

/// Records the event `name` of the project's contact `contact_id` and enrolls the contact in
/// the active triggered campaigns and automations listening for it, in the caller's transaction: the one path
/// of `POST /events` and of the events the service fires itself (`form.submitted`).
pub async fn fire(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    name: &str,
    data: &Value,
) -> Result<Fired, ApiError> {
    let (event_id, _) = events::insert(conn, project_id, contact_id, name, data).await?;
    crate::ops::automations::engine::enter_on_event(conn, project_id, contact_id, name, data)
        .await?;
    let mut fired = Fired::default();
    for (campaign, campaign_name) in campaigns::triggered_by(conn, project_id, name).await? {
        let source = EnrollSource::Event(event_id);
        let new =
            enrollments::insert_many(conn, project_id, campaign, &[contact_id], source).await?;
        if !new.is_empty() {
            fired.enrolled_campaigns.push(campaign_name);
        } else {
            fired.skipped_campaigns.push(campaign_name);
        }
    }
    Ok(fired)
}

/// A recorded event.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventRecord {
    pub id: Uuid,
    pub contact_id: Uuid,
    /// The contact's address.
    pub email: String,
    pub event: String,
    /// What was stored with it (`{}` when nothing was).
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventLogFilter {
    /// Only events of contacts subscribed to this site (404 `SITE_NOT_FOUND` when it is not a
    /// site of the project).
    pub site_id: Option<Uuid>,
    /// Only this contact's events (404 `CONTACT_NOT_FOUND` when it is not a contact of the
    /// project).
    pub contact_id: Option<Uuid>,
    /// Only events of this name (exact, trimmed; blank is no filter), at most 200 characters.
    #[param(max_length = 200)]
    pub event: Option<String>,
    /// Only events recorded at or after this time (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime)]
    pub since: Option<DateTime<Utc>>,
    /// Only events recorded before this time (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime)]
    pub until: Option<DateTime<Utc>>,
}

impl Validate for EventLogFilter {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.event);
        Ok(())
    }
}

/// A page of the project's events, newest first (`GET /events`, `list_event_log`).
pub async fn list_events(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &EventLogFilter,
) -> Result<Page<EventRecord>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = filter.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    if let Some(contact_id) = filter.contact_id
        && !insights::contact_exists(&mut conn, project_id, contact_id).await?
    {
        return Err(
            ApiError::not_found(format!("contact {contact_id} not found"))
                .with_code(MailErrorCode::ContactNotFound),
        );
    }
    let rows = insights::events(
        &mut conn,
        project_id,
        &EventFilter {
            site_id: filter.site_id,
            contact_id: filter.contact_id,
            name: filter.event.as_deref(),
            since: filter.since,
            until: filter.until,
            before,
            limit: i64::from(limit) + 1,
        },
    )
    .await?;
    let rows: Vec<EventRecord> = rows
        .into_iter()
        .map(|e| EventRecord {
            id: e.id,
            contact_id: e.contact_id,
            email: e.email,
            event: e.name,
            data: e.data,
            created_at: e.created_at,
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |e| e.id))
}
