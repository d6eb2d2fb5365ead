//! `POST /api/v1/identify`: create or update a contact, idempotent by email.

use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use diesel_async::AsyncConnection as _;
use http_kit::openapi::MailError;
use http_kit::request::{trim_and_dedupe, trim_optional};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::body::{normalize_email, optional_site_schema, tags_schema};
use crate::AppState;
use crate::db::contacts::{self, ContactData};
use crate::flows;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/identify").route(web::post().to(identify)));
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IdentifyRequest {
    /// Required. Stored trimmed and lowercased; it identifies the contact in the project.
    #[schema(format = Email)]
    pub email: String,
    /// Replaces the stored value only when a non-empty string is given (at most 200
    /// characters, trimmed).
    #[schema(max_length = 200)]
    pub first_name: Option<String>,
    /// As `first_name`.
    #[schema(max_length = 200)]
    pub last_name: Option<String>,
    /// Deep-merged into the stored properties: new keys are added, keys given again are
    /// replaced (objects merge key by key), keys not given are kept.
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Value>,
    /// Appended to the stored tags in order; tags already present are not repeated. Each tag
    /// 1..=100 characters, at most 100 per request.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// A site of the project; see `optional_site_schema`.
    #[schema(schema_with = optional_site_schema)]
    pub site_id: Option<Uuid>,
}

impl Validate for IdentifyRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)?;
        trim_optional(&mut self.first_name);
        trim_optional(&mut self.last_name);
        trim_and_dedupe(&mut self.tags);
        Ok(())
    }
}

impl IdentifyRequest {
    fn data(&self) -> ContactData<'_> {
        ContactData {
            first_name: self.first_name.as_deref(),
            last_name: self.last_name.as_deref(),
            properties: self.properties.as_ref(),
            tags: &self.tags,
            attribution: None,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Identified {
    pub contact_id: Uuid,
    /// `true` when this call created the contact (status 201).
    pub created: bool,
}

/// Create or update a contact by email.
#[utoipa::path(
    post,
    path = "/api/v1/identify",
    operation_id = "identify",
    tag = "contacts",
    request_body = IdentifyRequest,
    responses(
        (status = 201, description = "The contact was created", body = Identified),
        (status = 200, description = "The existing contact was updated", body = Identified),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), invalid email, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 422, description = "Creating the contact would pass the plan's contact limit (`PLAN_LIMIT`)", body = MailError),
    )
)]
pub async fn identify(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<IdentifyRequest>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let project_id = caller.owner_id;
    let mut conn = store::conn(&state.pool).await?;
    let answer = conn
        .transaction::<_, ApiError, _>(async |conn| {
            if let Some(site_id) = req.site_id {
                flows::require_site(conn, project_id, site_id).await?;
            }
            let data = req.data();
            let (contact, created) =
                match flows::create_contact(conn, &caller, &req.email, "identify", &data).await? {
                    Some(contact) => (contact, true),
                    None => {
                        let merged = contacts::merge(conn, project_id, &req.email, &data)
                            .await?
                            .ok_or_else(|| ApiError::internal("identify: the contact vanished"))?;
                        (merged, false)
                    }
                };
            if let Some(site_id) = req.site_id {
                flows::join_site(conn, project_id, contact.id, site_id, created).await?;
            }
            Ok(Identified {
                contact_id: contact.id,
                created,
            })
        })
        .await?;
    Ok(if answer.created {
        HttpResponse::Created().json(answer)
    } else {
        HttpResponse::Ok().json(answer)
    })
}
