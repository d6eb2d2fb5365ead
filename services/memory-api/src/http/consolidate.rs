//! Consolidation: `POST /memory/consolidate` records duplicate and stale-memory candidates
//! within a token budget; `GET /memory/consolidate/{runId}` lists them with their evidence.
//! A run never deletes or changes a memory, and never touches what `/memory/identity` injects.

use actix_web::web;
use auth::{ReadAccess, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use rate_limit::policy::Tier;
use uuid::Uuid;

use crate::ops::consolidate::{
    self as ops, ConsolidateRequest, ConsolidateResult, ConsolidationRun,
};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(consolidate),
    route!(get_run, at = "/memory/consolidate/{run_id}"),
];

/// Record duplicate and stale-memory candidates (tier pro or above).
#[utoipa::path(
    post,
    path = "/api/v1/memory/consolidate",
    operation_id = "consolidateMemory",
    tag = "memory",
    request_body(content = Option<ConsolidateRequest>, description = "Optional"),
    responses(
        (status = 200, description = "The run: memories (decisions with their reasoning, and \
            free-form entries) are read newest first while their o200k_base tokens fit the \
            budget; reading stops at the first that does not (`budget_exhausted`). Among what \
            was read, the older of two items with the same normalized text or a raw embedding \
            cosine ≥ 0.92 is a duplicate candidate; a decision is stale when a newer decision \
            on the same product has a cosine ≥ 0.85 with it, or when it is older than 180 days \
            and never referenced by a signal. Candidates are recorded only. The memories read \
            are those of the workspace (`workspace_id`, else the active one) and the \
            account-wide ones; with no workspace, the whole account's.", body = ConsolidateResult),
        (status = 400, description = "compute_budget_tokens outside 1..=5000, workspace_id not a UUID, or a malformed body", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
    )
)]
pub async fn consolidate(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<web::Json<ConsolidateResult>, ApiError> {
    caller.require_tier(Tier::Pro)?;
    let (budget, workspace_id) = ops::budget(&body)?;
    ops::consolidate(&state.pool, &caller, budget, workspace_id)
        .await
        .map(web::Json)
}

/// A consolidation run of the caller and its candidates (tier pro or above).
#[utoipa::path(
    get,
    path = "/api/v1/memory/consolidate/{runId}",
    operation_id = "getConsolidationRun",
    tag = "memory",
    params(("runId" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The run's id")),
    responses(
        (status = 200, description = "The run with its candidates, in the order found", body = ConsolidationRun),
        (status = 400, description = "runId is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "No such run of the caller", body = MemoryError),
    )
)]
pub async fn get_run(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    run_id: web::Path<Uuid>,
) -> Result<web::Json<ConsolidationRun>, ApiError> {
    ops::get_run(&state.pool, &caller, run_id.into_inner())
        .await
        .map(web::Json)
}
