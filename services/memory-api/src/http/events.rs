//! Business events: `POST /ingest/events`. Events of type `ai_cost` are AI cost telemetry,
//! summed by `GET /ai/costs` (see `routes::ai_costs`).

use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};

use crate::ops::events::{self as ops, EventIngested, IngestEvent};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(ingest)];

/// Record a business event (`ai_cost` events are AI cost telemetry).
#[utoipa::path(
    post,
    path = "/api/v1/ingest/events",
    operation_id = "ingestEvent",
    tag = "ingest",
    request_body = IngestEvent,
    responses(
        (status = 201, description = "Recorded", body = EventIngested),
        (status = 200, description = "A repeated `idempotency_key` or `external_id`: nothing recorded, the first event's id", body = EventIngested),
        (status = 400, description = "A field is missing or over its limit, or an `ai_cost` payload breaks its rules (the message names the field)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
    )
)]
pub async fn ingest(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<IngestEvent>,
) -> Result<HttpResponse, ApiError> {
    let ingested = ops::ingest(&state.pool, &caller, body.into_inner()).await?;
    Ok(if ingested.deduplicated {
        HttpResponse::Ok().json(ingested)
    } else {
        HttpResponse::Created().json(ingested)
    })
}
