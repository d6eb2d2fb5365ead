//! AI cost telemetry: `GET /ai/costs` and `GET /ai/costs/{product}`, the sums of the caller's
//! `ai_cost` events (see `routes::events`) over a window of UTC days, in exact decimal.

use actix_web::{HttpResponse, web};
use auth::ReadAccess;
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Query};
use http_kit::{Route, route};

use crate::ops::ai_costs::{self as ops, CostParams, CostSummary};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(summary), route!(product_summary)];

/// The caller's AI costs over all products.
#[utoipa::path(
    get,
    path = "/api/v1/ai/costs",
    operation_id = "getAiCosts",
    tag = "costs",
    params(CostParams),
    responses(
        (status = 200, description = "The cost summary (zeros without events)", body = CostSummary),
        (status = 400, description = "`days` out of range", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn summary(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: Query<CostParams>,
) -> Result<HttpResponse, ApiError> {
    let body = ops::summary(&state.pool, &caller, None, params.days).await?;
    Ok(exact_json(body))
}

/// The caller's AI costs of one product.
#[utoipa::path(
    get,
    path = "/api/v1/ai/costs/{product}",
    operation_id = "getProductAiCosts",
    tag = "costs",
    params(
        ("product" = String, Path, description = "The `product` of the `ai_cost` events: a product of the caller, or a name any of the caller's `ai_cost` events carried"),
        CostParams,
    ),
    responses(
        (status = 200, description = "The product's cost summary (zeros when it has no events in the window)", body = CostSummary),
        (status = 400, description = "`days` out of range", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "The caller has no product of that name and no `ai_cost` event ever named it", body = MemoryError),
    )
)]
pub async fn product_summary(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    product: web::Path<String>,
    params: Query<CostParams>,
) -> Result<HttpResponse, ApiError> {
    let product = Some(product.into_inner());
    let body = ops::summary(&state.pool, &caller, product, params.days).await?;
    Ok(exact_json(body))
}

/// A summary's exact JSON (its sums are numbers with exactly their digits).
fn exact_json(body: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}
