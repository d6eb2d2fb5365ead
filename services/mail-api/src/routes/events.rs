//! `POST /api/v1/events`: record a named event and enroll the contact in the triggered
//! campaigns listening for it.

use actix_web::web;
use auth::WriteAccess;
use diesel_async::AsyncConnection as _;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::body::normalize_email;
use crate::AppState;
use crate::db::campaigns::{self, EnrollSource};
use crate::db::events;
use crate::flows;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/events").route(web::post().to(track)));
}

/// Unknown fields are ignored.
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
                if campaigns::enroll(conn, project_id, campaign, contact.id, source).await? {
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
