//! The identity kernel: `GET /memory/identity`, `PUT /memory/identity` (RFC 7396 merge patch,
//! optional `If-Match: <version>`).

use actix_web::http::header::{self, HeaderMap};
use actix_web::{HttpRequest, HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::state::AppState;
use crate::db::kernels::{self, NewKernel, UpdateError};
use crate::db::owner::Owner;
use crate::db::owner_cache;
use crate::domain::kernel::{self, Confidence, TOKEN_BUDGET};
use crate::domain::merge_patch;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/memory/identity")
            .route(web::get().to(get))
            .route(web::put().to(put)),
    );
}

/// The kernel and what is injected from it.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityKernel {
    /// The kernel as stored (free-form; documented keys identity, products, constraints,
    /// model_preferences).
    #[schema(value_type = Object)]
    pub kernel: Value,
    /// Compact Markdown for prompt injection; null for an empty kernel.
    pub injection_block: Option<String>,
    /// o200k_base tokens of `injection_block`.
    pub token_count: i32,
    pub confidence: Confidence,
    pub updated_at: DateTime<Utc>,
    /// Send as `If-Match` to update only this version (also the `ETag`).
    pub version: i32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityUpdated {
    pub success: bool,
    pub token_count: i32,
    pub version: i32,
    pub updated_at: DateTime<Utc>,
}

fn etag(version: i32) -> (header::HeaderName, String) {
    (header::ETAG, format!("\"{version}\""))
}

/// The identity kernel of the caller's environment.
#[utoipa::path(
    get,
    path = "/api/v1/memory/identity",
    operation_id = "getIdentity",
    tag = "memory",
    responses(
        (status = 200, description = "The kernel", body = IdentityKernel,
            headers(("ETag" = String, description = "The version, quoted"))),
        (status = 404, description = "No kernel was written yet", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    synced: Option<auth::Synced>,
) -> Result<HttpResponse, ApiError> {
    let owner = Owner::of(&caller);
    let stored = state
        .kernels
        .find(synced, &owner_cache::key(owner), "", async || {
            let mut conn = store::conn(&state.pool).await?;
            Ok::<_, ApiError>(kernels::find(&mut conn, owner).await?)
        })
        .await?
        .ok_or_else(|| ApiError::not_found("no identity kernel yet: PUT one first"))?;
    let members = stored.kernel.as_object().cloned().unwrap_or_default();
    let confidence = kernel::confidence(
        &members,
        usize::try_from(stored.token_count).unwrap_or(0),
        stored.updated_at,
        Utc::now(),
    );
    Ok(HttpResponse::Ok()
        .insert_header(etag(stored.version))
        .json(IdentityKernel {
            kernel: stored.kernel,
            injection_block: stored.injection_block,
            token_count: stored.token_count,
            confidence,
            updated_at: stored.updated_at,
            version: stored.version,
        }))
}

/// `If-Match` in the form the document's pattern gives: `*` (any version), or a version of
/// at most 9 digits, quoted or not, weak (`W/`) or not. `None` when absent.
fn if_match(headers: &HeaderMap) -> Result<Option<i32>, ApiError> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    let not_a_version = || ApiError::invalid_field("If-Match", "must be a version number");
    let text = value.to_str().map_err(|_| not_a_version())?.trim();
    if text == "*" {
        return Ok(None);
    }
    let tag = text.strip_prefix("W/").unwrap_or(text);
    let digits = tag
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(tag);
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_a_version());
    }
    digits.parse::<i32>().map(Some).map_err(|_| not_a_version())
}

/// Why a patched kernel is refused (422).
enum Refusal {
    WrongType(String),
    OverBudget(usize),
}

/// Merge-patch the identity kernel.
#[utoipa::path(
    put,
    path = "/api/v1/memory/identity",
    operation_id = "putIdentity",
    tag = "memory",
    request_body(content = Object, description = "An RFC 7396 merge patch (null deletes a key). \
        Documented keys: identity (object), products (array), constraints (array of strings), \
        model_preferences (object)."),
    params(("If-Match" = Option<String>, Header, nullable = false,
        pattern = r#"^(\*|(W/)?("[0-9]{1,9}"|[0-9]{1,9}))$"#,
        description = "Update only if the kernel is at this version (`*`: any version)")),
    responses(
        (status = 200, description = "Updated", body = IdentityUpdated,
            headers(("ETag" = String, description = "The new version, quoted"))),
        (status = 400, description = "The body is not a JSON object, or If-Match is not a version", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "Not used: a first PUT creates the kernel", body = MemoryError),
        (status = 409, description = "If-Match names a version that is not the current one", body = MemoryError),
        (status = 422, description = "A documented key has the wrong type, or the injection block would exceed 4,000 tokens", body = MemoryError),
    )
)]
pub async fn put(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    body: http_kit::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let expected = if_match(req.headers())?;
    let patch = body.into_inner();
    if !patch.is_object() {
        return Err(ApiError::invalid_field(
            "body",
            "must be a JSON object (a merge patch)",
        ));
    }
    let mut conn = store::conn(&state.pool).await?;
    let stored = kernels::update(&mut conn, Owner::of(&caller), expected, |members| {
        let mut merged = Value::Object(members);
        merge_patch::apply(&mut merged, &patch);
        let Value::Object(merged) = merged else {
            unreachable!("an object patched by an object stays an object")
        };
        kernel::check_types(&merged).map_err(Refusal::WrongType)?;
        let rendered = kernel::render(&merged);
        if rendered.token_count > TOKEN_BUDGET {
            return Err(Refusal::OverBudget(rendered.token_count));
        }
        Ok(NewKernel {
            kernel: merged,
            injection_block: rendered.block,
            token_count: i32::try_from(rendered.token_count).unwrap_or(i32::MAX),
        })
    })
    .await
    .map_err(|err| match err {
        UpdateError::Stale { expected, current } => ApiError::conflict(format!(
            "If-Match names version {expected}, but the kernel is at version {current}"
        )),
        UpdateError::Rejected(Refusal::WrongType(why)) => ApiError::unprocessable(why),
        UpdateError::Rejected(Refusal::OverBudget(tokens)) => ApiError::unprocessable(format!(
            "the injection block would be {tokens} tokens, over the budget of {TOKEN_BUDGET}"
        )),
        UpdateError::Database(e) => ApiError::internal_error(&e),
    })?;
    Ok(HttpResponse::Ok()
        .insert_header(etag(stored.version))
        .json(IdentityUpdated {
            success: true,
            token_count: stored.token_count,
            version: stored.version,
            updated_at: stored.updated_at,
        }))
}
