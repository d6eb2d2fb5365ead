//! Connector intake: `POST /connectors/intake`. An external AI connector's command is recorded
//! in the ledger and, unless it asks for a lead capability, becomes a pending proposal that
//! only a first-party credential can approve (see [`super::proposals`]). Nothing is executed.

use actix_web::http::header::HeaderMap;
use actix_web::{HttpRequest, HttpResponse, web};
use auth::ProposeAccess;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};

use crate::ops::intake::{self as ops, ConnectorIntake, IntakeResult};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(submit)];

/// Record a connector's command as a pending proposal (or queue a lead).
#[utoipa::path(
    post,
    path = "/api/v1/connectors/intake",
    operation_id = "submitConnectorIntake",
    tag = "connectors",
    request_body = ConnectorIntake,
    params(("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255,
        pattern = r"^[!-~]([ -~]*[!-~])?$",
        description = "Optional. A retry with a key this owner used before writes nothing and answers the first call's answer again (with `Idempotent-Replayed: true`), whatever its body.")),
    responses(
        (status = 200, description = "Recorded in the ledger; `proposed` with a pending proposal, or `lead_queued`",
            body = IntakeResult,
            headers(("Idempotent-Replayed" = String, description = "`true` when this answers an earlier call with the same Idempotency-Key"))),
        (status = 400, description = "A field is missing or breaks its rule, or Idempotency-Key is malformed (the message names it)", body = MemoryError),
        (status = 403, description = "The credential holds neither the propose nor the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace the credential may see", body = MemoryError),
    )
)]
pub async fn submit(
    ProposeAccess(caller): ProposeAccess,
    req: HttpRequest,
    state: web::Data<AppState>,
    body: http_kit::Json<ConnectorIntake>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency_key(req.headers())?;
    let (result, replayed) = ops::submit(&state.pool, &caller, key, &body).await?;
    let mut response = HttpResponse::Ok();
    if replayed {
        response.insert_header(("Idempotent-Replayed", "true"));
    }
    Ok(response.json(result))
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(KEY_HEADER) else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| {
            (1..=KEY_MAX).contains(&k.len()) && k.bytes().all(|b| (b' '..=b'~').contains(&b))
        })
        .ok_or_else(|| {
            ApiError::invalid_field(KEY_HEADER, "must be 1..=255 visible ASCII characters")
        })?;
    Ok(Some(key.to_owned()))
}

/// The `Idempotency-Key` header: visible ASCII, 1..=255 characters.
const KEY_HEADER: &str = "Idempotency-Key";

const KEY_MAX: usize = 255;
