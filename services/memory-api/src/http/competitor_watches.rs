//! Stored competitor watches, run on a schedule: `POST /marketing/competitor-watches`, `GET`
//! (a page, or one), `PATCH` and `DELETE /marketing/competitor-watches/{id}`.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::competitor_watches::{
    self as ops, CompetitorWatch, CreateCompetitorWatch, UpdateCompetitorWatch,
};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(create),
    route!(list),
    route!(get),
    route!(update),
    route!(delete),
];

/// Store a competitor watch that runs on a schedule.
#[utoipa::path(
    post,
    path = "/api/v1/marketing/competitor-watches",
    operation_id = "createCompetitorWatch",
    tag = "marketing",
    description = "Stores a competitor watch: the definition `POST \
        /marketing/competitor-watch/run` takes (`competitors` with their `urls`, `focus`, \
        `workspace_id`), a `name` and `interval_minutes` (60..=10080). The scheduler (in every \
        memory-api replica, each due watch started by one; a pass a minute by default) \
        starts its first run at once and one every `interval_minutes` after: each is a \
        competitor-watch run like the route's, read at `GET \
        /marketing/competitor-watch/run/{runId}` (the watch's `last_run_id`), whose changes \
        become intelligence-feed items with their evidence. The checks are the run route's, \
        made here: the deployment's model, every URL against the deployment's address policy, \
        the workspace and the caller's model credential; a run whose checks fail later (the \
        credential deleted, a name resolving to a refused address) fails or records that \
        URL's error. An owner stores at most 25 watches.",
    request_body = CreateCompetitorWatch,
    responses(
        (status = 201, description = "Stored; its first run is due at once", body = CompetitorWatch,
            headers(("Location" = String, description = "`/api/v1/marketing/competitor-watches/{id}`"))),
        (status = 400, description = "A field is invalid or out of range, or a URL names an address the deployment does not allow (the message names the field)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 409, description = "The owner stores 25 watches already (`VALIDATION_ERROR`)", body = MemoryError),
        (status = 422, description = "The deployment has no language model (the message starts with `LLM_NOT_CONFIGURED`; nothing is stored), or the caller has no model credential (`POST /byok`, service `openai`)", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateCompetitorWatch>,
) -> Result<HttpResponse, ApiError> {
    let watch = ops::create(&state, &caller, &body).await?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, location(watch.id)))
        .json(watch))
}

fn location(id: Uuid) -> String {
    format!("/api/v1/marketing/competitor-watches/{id}")
}

/// List the caller's competitor watches.
#[utoipa::path(
    get,
    path = "/api/v1/marketing/competitor-watches",
    operation_id = "listCompetitorWatches",
    tag = "marketing",
    params(PageParams),
    responses(
        (status = 200, description = "A page of watches, in creation order", body = Page<CompetitorWatch>),
        (status = 400, description = "Invalid limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<Page<CompetitorWatch>>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    ops::list(&state, &caller, after, limit)
        .await
        .map(web::Json)
}

/// A competitor watch and its schedule.
#[utoipa::path(
    get,
    path = "/api/v1/marketing/competitor-watches/{id}",
    operation_id = "getCompetitorWatch",
    tag = "marketing",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The watch's id")),
    responses(
        (status = 200, description = "The watch, with `next_run_at`, `last_run_at` and `last_run_id`", body = CompetitorWatch),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such watch of the caller", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<CompetitorWatch>, ApiError> {
    ops::get(&state, &caller, id.into_inner())
        .await
        .map(web::Json)
}

/// Rename, reschedule, pause or resume a competitor watch.
#[utoipa::path(
    patch,
    path = "/api/v1/marketing/competitor-watches/{id}",
    operation_id = "updateCompetitorWatch",
    tag = "marketing",
    description = "Changes the fields given (absent or null: unchanged). A new \
        `interval_minutes` counts from the last run (a watch that never ran keeps its first \
        run); `paused: true` stops the runs, `false` resumes them (a run missed meanwhile is \
        due at once). The definition itself is not changed here: delete the watch and store \
        another.",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The watch's id")),
    request_body = UpdateCompetitorWatch,
    responses(
        (status = 200, description = "The watch as changed", body = CompetitorWatch),
        (status = 400, description = "A field is invalid or out of range (the message names it), or the id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such watch of the caller", body = MemoryError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateCompetitorWatch>,
) -> Result<web::Json<CompetitorWatch>, ApiError> {
    ops::update(&state, &caller, id.into_inner(), &body)
        .await
        .map(web::Json)
}

/// Delete a competitor watch.
#[utoipa::path(
    delete,
    path = "/api/v1/marketing/competitor-watches/{id}",
    operation_id = "deleteCompetitorWatch",
    tag = "marketing",
    description = "Deletes the watch: no run of it starts after. Its runs stay readable at \
        `GET /marketing/competitor-watch/run/{runId}` (finished runs are kept 30 days), and \
        the snapshots of its URLs stay, so another watch of them reports changes since.",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The watch's id")),
    responses(
        (status = 200, description = "Deleted", body = ops::CompetitorWatchDeleted),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such watch of the caller", body = MemoryError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ops::CompetitorWatchDeleted>, ApiError> {
    ops::delete(&state, &caller, id.into_inner())
        .await
        .map(web::Json)
}
