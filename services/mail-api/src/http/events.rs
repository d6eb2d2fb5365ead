//! `POST /api/v1/events`: record a named event and enroll the contact in the triggered
//! campaigns listening for it; `GET /api/v1/events`: the recorded events, newest first.

use actix_web::web;
use auth::{Caller, WriteAccess};
use chrono::{DateTime, Utc};
use diesel_async::AsyncConnection as _;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::body::normalize_email;
use crate::AppState;
use crate::db::campaigns;
use crate::db::enrollments::{self, EnrollSource};
use crate::db::events;
use crate::db::insights::{self, EventFilter};
use crate::flows;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/events")
            .route(web::post().to(track))
            .route(web::get().to(list)),
    );
}

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

/// Fire a named event.
#[utoipa::path(
    post,
    path = "/api/v1/events",
    operation_id = "trackEvent",
    tag = "events",
    request_body = EventRequest,
    responses(
        (status = 200, description = "The event was stored; enrollments made (0 when no active triggered campaign listens for it)", body = EventTracked),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), invalid email, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 422, description = "The contact does not exist and the plan's contact limit is reached (`PLAN_LIMIT`); nothing was stored", body = MailError),
    )
)]
pub async fn track(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<EventRequest>,
) -> Result<web::Json<EventTracked>, ApiError> {
    let req = body.into_inner();
    let project_id = caller.owner_id;
    let empty = Value::Object(Default::default());
    let mut conn = store::conn(&state.pool).await?;
    let tracked = conn
        .transaction::<_, ApiError, _>(async |conn| {
            let (contact, contact_created) =
                flows::find_or_create_minimal(conn, &caller, &req.email).await?;
            let data = req.data.as_ref().unwrap_or(&empty);
            let (event_id, _) =
                events::insert(conn, project_id, contact.id, &req.event, data).await?;
            let mut enrolled_campaigns = Vec::new();
            let mut skipped_campaigns = Vec::new();
            for (campaign, name) in campaigns::triggered_by(conn, project_id, &req.event).await? {
                let source = EnrollSource::Event(event_id);
                let new =
                    enrollments::insert_many(conn, project_id, campaign, &[contact.id], source)
                        .await?;
                if !new.is_empty() {
                    enrolled_campaigns.push(name);
                } else {
                    skipped_campaigns.push(name);
                }
            }
            Ok(EventTracked {
                event: req.event.clone(),
                contact_id: contact.id,
                contact_created,
                enrollments_created: enrolled_campaigns.len(),
                enrolled_campaigns,
                skipped_campaigns,
            })
        })
        .await?;
    Ok(web::Json(tracked))
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

/// The project's recorded events, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/events",
    operation_id = "listEvents",
    tag = "events",
    params(EventLogFilter, PageParams),
    responses(
        (status = 200, description = "A page of events, newest first", body = Page<EventRecord>),
        (status = 400, description = "Invalid site_id, contact_id, event, since, until, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` or `contact_id` is not the project's (`SITE_NOT_FOUND`, `CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<EventLogFilter>,
) -> Result<web::Json<Page<EventRecord>>, ApiError> {
    list_events(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
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
                .with_code("CONTACT_NOT_FOUND"),
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
