//! Credentials supplied by the user (BYOK): `GET /byok`, `POST /byok`, `DELETE /byok/{id}`.
//! Keys are sealed at rest and never shown again: answers carry a `key_hint` only.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::byok::{self, NewCredential};
use crate::db::owner::Owner;
use crate::domain;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/byok")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(web::resource("/byok/{id}").route(web::delete().to(delete)));
}

/// A stored credential. It carries a hint of the key, never the key.
#[derive(Debug, Serialize, ToSchema)]
pub struct ByokCredential {
    pub id: Uuid,
    /// The service the key is for, e.g. `openai`.
    pub service: String,
    pub label: String,
    /// `…` and the key's last characters (a quarter of the key at most, never more than 4).
    pub key_hint: String,
    pub created_at: DateTime<Utc>,
    /// When the service last called with this key (null: never).
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<byok::Credential> for ByokCredential {
    fn from(c: byok::Credential) -> Self {
        Self {
            id: c.id,
            service: c.service,
            label: c.label,
            key_hint: c.key_hint,
            created_at: c.created_at,
            last_used_at: c.last_used_at,
        }
    }
}

/// The body of `POST /byok`. Unknown fields are refused.
#[derive(Deserialize, Serialize, ToSchema)]
pub struct CreateByok {
    /// What the key is for: a lowercase name (letters, digits, `.`, `_`, `-`; 1..=50).
    /// `openai` is the service of the deployment's OpenAI-compatible endpoint: embeddings and
    /// model calls made for the caller go through this key when it is stored. One credential
    /// per service.
    #[schema(min_length = 1, max_length = 50, pattern = r"^[a-z0-9][a-z0-9._-]*$")]
    pub service: String,
    /// 1..=100 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub label: String,
    /// The key, 8..=4096 printable ASCII characters without spaces. Stored encrypted; never
    /// shown again.
    #[schema(min_length = 8, max_length = 4096, pattern = r"^[!-~]+$")]
    pub key: String,
}

impl std::fmt::Debug for CreateByok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateByok")
            .field("service", &self.service)
            .field("label", &self.label)
            .field("key", &"..")
            .finish()
    }
}

impl http_kit::Validate for CreateByok {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.label);
        Ok(())
    }
}

/// List the caller's stored credentials (hints only).
#[utoipa::path(
    get,
    path = "/api/v1/byok",
    operation_id = "listByok",
    tag = "credentials",
    params(PageParams),
    responses(
        (status = 200, description = "A page of credentials, oldest first", body = Page<ByokCredential>),
        (status = 400, description = "Invalid limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<Page<ByokCredential>>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = byok::list(&mut conn, Owner::of(&caller), after, i64::from(limit) + 1).await?;
    let rows: Vec<ByokCredential> = rows.into_iter().map(ByokCredential::from).collect();
    Ok(web::Json(Page::from_rows(rows, limit, |c| c.id)))
}

/// Store a credential for a service (the key is sealed and never shown again).
#[utoipa::path(
    post,
    path = "/api/v1/byok",
    operation_id = "createByok",
    tag = "credentials",
    request_body = CreateByok,
    responses(
        (status = 201, description = "Stored; the answer shows the key's hint only", body = ByokCredential),
        (status = 400, description = "A field is missing or breaks its rule (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 409, description = "A credential for this service is stored: delete it first", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateByok>,
) -> Result<HttpResponse, ApiError> {
    let id = Uuid::now_v7();
    let sealed = domain::byok::seal(&state.kek, id, &body.key);
    let hint = domain::byok::key_hint(&body.key);
    let mut conn = store::conn(&state.pool).await?;
    let stored = byok::insert(
        &mut conn,
        Owner::of(&caller),
        NewCredential {
            id,
            service: &body.service,
            label: &body.label,
            sealed_key: &sealed,
            key_hint: &hint,
        },
    )
    .await?
    .ok_or_else(|| {
        ApiError::conflict(format!(
            "a credential for service {:?} is stored: delete it first (DELETE /byok/{{id}})",
            body.service
        ))
    })?;
    Ok(HttpResponse::Created().json(ByokCredential::from(stored)))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ByokDeleted {
    pub success: bool,
    pub id: Uuid,
}

/// Delete a stored credential (its key is gone for good).
#[utoipa::path(
    delete,
    path = "/api/v1/byok/{id}",
    operation_id = "deleteByok",
    tag = "credentials",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The credential's id")),
    responses(
        (status = 200, description = "Deleted", body = ByokDeleted),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such credential of the caller", body = MemoryError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ByokDeleted>, ApiError> {
    let id = id.into_inner();
    let mut conn = store::conn(&state.pool).await?;
    if !byok::delete(&mut conn, Owner::of(&caller), id).await? {
        return Err(ApiError::not_found("no such credential"));
    }
    Ok(web::Json(ByokDeleted { success: true, id }))
}
