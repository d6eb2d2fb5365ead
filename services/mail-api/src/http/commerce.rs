//! Commerce platforms ([`crate::ops::commerce`]): the project's sources
//! (`POST`/`GET /api/v1/platforms/commerce`, `DELETE /api/v1/platforms/commerce/{id}`), its
//! triggers (`POST`/`GET /api/v1/platforms/triggers`, `DELETE /api/v1/platforms/triggers/{id}`)
//! and the log of the webhooks received (`GET /api/v1/platforms/events`).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
use crate::ops::commerce::events::{PlatformEventRecord, list_platform_events};
use crate::ops::commerce::triggers::{
    ConfigurePlatformTrigger, PlatformFilter, PlatformTrigger, configure_platform_trigger_in,
    delete_platform_trigger, list_platform_triggers,
};
use crate::ops::commerce::{
    AddCommerceSource, CommerceSource, add_commerce_source, delete_commerce_source,
    list_commerce_sources,
};

const ADD_SOURCE: &str = "POST /api/v1/platforms/commerce";
const ADD_TRIGGER: &str = "POST /api/v1/platforms/triggers";

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list_sources),
    route!(add_source),
    route!(delete_source),
    route!(list_triggers),
    route!(add_trigger),
    route!(delete_trigger),
    route!(list_events),
];

/// The project's commerce sources, oldest first (never their secrets).
#[utoipa::path(
    get,
    path = "/api/v1/platforms/commerce",
    operation_id = "listCommerceSources",
    tag = "imports",
    params(PageParams),
    responses(
        (status = 200, description = "A page of sources", body = Page<CommerceSource>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list_sources(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<CommerceSource>>, ApiError> {
    list_commerce_sources(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Register a Stripe or Shopify webhook endpoint: its signing secret is stored sealed; the
/// answer's `webhook_path` is where the platform posts.
#[utoipa::path(
    post,
    path = "/api/v1/platforms/commerce",
    operation_id = "addCommerceSource",
    tag = "imports",
    params(IdempotencyHeader),
    request_body = AddCommerceSource,
    responses(
        (status = 201, description = "Registered (or replayed)", body = CommerceSource,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), or bad Idempotency-Key", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn add_source(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<AddCommerceSource>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let project_id = caller.owner_id;
    Idempotent::new(project_id, ADD_SOURCE, &key, &req)?
        .create_once(&state.pool, async |conn| {
            add_commerce_source(conn, &state.kek, project_id, &req).await
        })
        .await
}

/// Delete a commerce source: its sealed secret goes, its webhooks are refused from then on
/// (404); the events it delivered stay in the log.
#[utoipa::path(
    delete,
    path = "/api/v1/platforms/commerce/{id}",
    operation_id = "deleteCommerceSource",
    tag = "imports",
    params(("id" = Uuid, Path, description = "The source's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a source of this project (`COMMERCE_SOURCE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete_source(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_commerce_source(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The project's platform triggers, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/platforms/triggers",
    operation_id = "listPlatformTriggers",
    tag = "imports",
    params(PlatformFilter, PageParams),
    responses(
        (status = 200, description = "A page of triggers", body = Page<PlatformTrigger>),
        (status = 400, description = "Invalid platform, limit or cursor", body = MailError),
    )
)]
pub async fn list_triggers(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<PlatformFilter>,
) -> Result<web::Json<Page<PlatformTrigger>>, ApiError> {
    list_platform_triggers(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Map a commerce platform's event type to an action on the event's contact: `fire_event`
/// (`event_name`), `tag` (`tag`), `enroll` (`campaign_id`) or `record_conversion`.
#[utoipa::path(
    post,
    path = "/api/v1/platforms/triggers",
    operation_id = "configurePlatformTrigger",
    tag = "imports",
    params(IdempotencyHeader),
    request_body = ConfigurePlatformTrigger,
    responses(
        (status = 201, description = "Configured (or replayed)", body = PlatformTrigger,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "Missing or invalid field, or the action's field missing or another action's given (named in the message and in `details.field`), or bad Idempotency-Key", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`campaign_id` is not a campaign of the project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn add_trigger(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<ConfigurePlatformTrigger>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let project_id = caller.owner_id;
    Idempotent::new(project_id, ADD_TRIGGER, &key, &req)?
        .create_once(&state.pool, async |conn| {
            configure_platform_trigger_in(conn, project_id, &req).await
        })
        .await
}

/// Delete a platform trigger; what it already did stays.
#[utoipa::path(
    delete,
    path = "/api/v1/platforms/triggers/{id}",
    operation_id = "deletePlatformTrigger",
    tag = "imports",
    params(("id" = Uuid, Path, description = "The trigger's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a trigger of this project (`PLATFORM_TRIGGER_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete_trigger(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_platform_trigger(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The commerce webhooks the project received, newest first: what arrived and what it did.
#[utoipa::path(
    get,
    path = "/api/v1/platforms/events",
    operation_id = "listPlatformEvents",
    tag = "imports",
    params(PlatformFilter, PageParams),
    responses(
        (status = 200, description = "A page of events, newest first", body = Page<PlatformEventRecord>),
        (status = 400, description = "Invalid platform, limit or cursor", body = MailError),
    )
)]
pub async fn list_events(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<PlatformFilter>,
) -> Result<web::Json<Page<PlatformEventRecord>>, ApiError> {
    list_platform_events(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}
