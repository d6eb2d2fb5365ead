//! The identity kernel: `GET /memory/identity`, `PUT /memory/identity` (RFC 7396 merge patch,
//! optional `If-Match: <version>`).

use actix_web::http::header::{self, HeaderMap};
use actix_web::{HttpRequest, HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use serde_json::Value;

use crate::ops::identity::{self as ops, IdentityKernel, IdentityUpdated};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(get), route!(put)];

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
    let kernel = ops::get(&state, &caller, synced).await?;
    Ok(HttpResponse::Ok()
        .insert_header(etag(kernel.version))
        .json(kernel))
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
    let updated = ops::put(&state.pool, &caller, expected, body.into_inner()).await?;
    Ok(HttpResponse::Ok()
        .insert_header(etag(updated.version))
        .json(updated))
}

fn etag(version: i32) -> (header::HeaderName, String) {
    (header::ETAG, format!("\"{version}\""))
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
