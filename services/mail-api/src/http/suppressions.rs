//! Suppressions: `GET`/`POST /api/v1/suppressions`, `DELETE /api/v1/suppressions/{email}`.
//! A suppressed address is never sent to; bounces and complaints add themselves later.

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MailError;
use http_kit::request::trim_optional;
use http_kit::{ApiError, Page, PageParams, Query, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::body::normalize_email;
use crate::AppState;
use crate::db::suppressions;
use crate::domain::email;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/suppressions")
            .route(web::get().to(list))
            .route(web::post().to(add)),
    )
    .service(web::resource("/suppressions/{email}").route(web::delete().to(remove)));
}

/// Why an address is suppressed.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuppressionReason {
    Manual,
    Bounced,
    Complained,
    Unsubscribed,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Suppression {
    pub id: Uuid,
    pub email: String,
    pub reason: SuppressionReason,
    pub note: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<suppressions::Suppression> for Suppression {
    fn from(s: suppressions::Suppression) -> Self {
        let reason = match s.reason.as_str() {
            "bounced" => SuppressionReason::Bounced,
            "complained" => SuppressionReason::Complained,
            "unsubscribed" => SuppressionReason::Unsubscribed,
            _ => SuppressionReason::Manual,
        };
        Self {
            id: s.id,
            email: s.email,
            reason,
            note: s.note,
            created_at: s.created_at,
        }
    }
}

/// List the project's suppressed addresses, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/suppressions",
    operation_id = "listSuppressions",
    tag = "suppressions",
    params(PageParams),
    responses(
        (status = 200, description = "A page of suppressions", body = Page<Suppression>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<Suppression>>, ApiError> {
    list_suppressions(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// A page of the project's suppressions (`GET /suppressions`, `list_suppressions`).
pub async fn list_suppressions(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<Suppression>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = suppressions::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows: Vec<Suppression> = rows.into_iter().map(Suppression::from).collect();
    Ok(Page::from_rows(rows, limit, |s| s.id))
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AddSuppression {
    /// Required; stored trimmed and lowercased.
    #[schema(format = Email)]
    pub email: String,
    /// Optional free text, at most 1,000 characters (trimmed; blank is absent).
    #[schema(max_length = 1000)]
    pub note: Option<String>,
}

impl Validate for AddSuppression {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)?;
        trim_optional(&mut self.note);
        Ok(())
    }
}

/// Suppress an address (reason `manual`).
#[utoipa::path(
    post,
    path = "/api/v1/suppressions",
    operation_id = "addSuppression",
    tag = "suppressions",
    request_body = AddSuppression,
    responses(
        (status = 201, description = "The address is now suppressed", body = Suppression),
        (status = 200, description = "The address was already suppressed; the existing record, unchanged", body = Suppression),
        (status = 400, description = "Missing or invalid field, invalid email, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn add(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<AddSuppression>,
) -> Result<HttpResponse, ApiError> {
    let (body, created) = add_suppression(&state, caller.owner_id, &body).await?;
    Ok(if created {
        HttpResponse::Created().json(body)
    } else {
        HttpResponse::Ok().json(body)
    })
}

/// Suppresses an address (`POST /suppressions`, `add_suppression`); `true` when it was not
/// suppressed before.
pub async fn add_suppression(
    state: &AppState,
    project_id: Uuid,
    req: &AddSuppression,
) -> Result<(Suppression, bool), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let (row, created) = suppressions::add(
        &mut conn,
        project_id,
        &req.email,
        "manual",
        req.note.as_deref(),
    )
    .await?;
    Ok((Suppression::from(row), created))
}

/// Lift a suppression, whatever its reason.
#[utoipa::path(
    delete,
    path = "/api/v1/suppressions/{email}",
    operation_id = "removeSuppression",
    tag = "suppressions",
    params(("email" = String, Path, format = Email, description = "The suppressed address (URL-encoded; case-insensitive)")),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Not a valid email address", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "The project has not suppressed this address", body = MailError),
    )
)]
pub async fn remove(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    remove_suppression(&state, caller.owner_id, &path).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Lifts the suppression of `address` (`DELETE /suppressions/{email}`, `remove_suppression`):
/// 404 when the project has not suppressed it.
pub async fn remove_suppression(
    state: &AppState,
    project_id: Uuid,
    address: &str,
) -> Result<(), ApiError> {
    let address = email::normalize(address)
        .ok_or_else(|| ApiError::invalid_field("email", "is not a valid email address"))?;
    let mut conn = store::conn(&state.pool).await?;
    if suppressions::remove(&mut conn, project_id, &address).await? {
        Ok(())
    } else {
        Err(ApiError::not_found("this address is not suppressed"))
    }
}
