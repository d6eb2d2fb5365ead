//! Segments: `GET|POST /api/v1/segments`, `GET|PATCH|DELETE /api/v1/segments/{id}`, the
//! contacts a segment matches (`GET /api/v1/segments/{id}/contacts`), what rules would match
//! before they are saved (`POST /api/v1/segments/preview`, `POST /api/v1/segments/estimate`)
//! and the win-back draft (`GET /api/v1/segments/win-back`), over [`crate::ops::segments`].
//! Segments written by the language model from a description are in
//! [`super::segment_description`].

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
use crate::ops::contacts::Contact;
pub use crate::ops::segments::segment_contact_ids;
use crate::ops::segments::{
    CreateSegment, EstimateSegmentSize, PreviewSegment, Segment, SegmentOrigin, SegmentPreview,
    SegmentSize, UpdateSegment, WinBackDraft, WinBackQuery, delete_segment, estimate_segment_size,
    get_segment, insert_segment, list_segments, preview_segment, segment_contacts, update_segment,
    win_back_draft,
};

const ROUTE: &str = "POST /api/v1/segments";

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(preview),
    route!(estimate),
    route!(win_back),
    route!(get),
    route!(update),
    route!(delete),
    route!(contacts),
];

/// Create a segment: named rules over the project's contacts.
#[utoipa::path(
    post,
    path = "/api/v1/segments",
    operation_id = "createSegment",
    tag = "segments",
    request_body = CreateSegment,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed)", body = Segment,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "A missing or invalid field or rule, named by its path in the message and in `details.field` (`rules.any[1].op`); more than 100 conditions (`rules`); a bad Idempotency-Key; or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "A `site_id` rule names a site that is not the project's (`SITE_NOT_FOUND`, `details.field` names the rule's value)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateSegment>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let project_id = caller.owner_id;
    Idempotent::new(project_id, ROUTE, &key, &req)?
        .create_once(&state.pool, async |conn| {
            insert_segment(conn, project_id, &req, SegmentOrigin::Rules).await
        })
        .await
}

/// List the project's segments, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/segments",
    operation_id = "listSegments",
    tag = "segments",
    params(PageParams),
    responses(
        (status = 200, description = "A page of segments", body = Page<Segment>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<Segment>>, ApiError> {
    list_segments(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// One segment, with its rules.
#[utoipa::path(
    get,
    path = "/api/v1/segments/{id}",
    operation_id = "getSegment",
    tag = "segments",
    params(("id" = Uuid, Path, description = "The segment's id")),
    responses(
        (status = 200, description = "The segment", body = Segment),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a segment of this project (`SEGMENT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Segment>, ApiError> {
    get_segment(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Change a segment's name, description or rules.
#[utoipa::path(
    patch,
    path = "/api/v1/segments/{id}",
    operation_id = "updateSegment",
    tag = "segments",
    params(("id" = Uuid, Path, description = "The segment's id")),
    request_body = UpdateSegment,
    responses(
        (status = 200, description = "The segment as updated", body = Segment),
        (status = 400, description = "`id` is not a UUID, an invalid field or rule (`details.field` names its path), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a segment of this project (`SEGMENT_NOT_FOUND`), or a `site_id` rule names a site that is not the project's (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateSegment>,
) -> Result<web::Json<Segment>, ApiError> {
    update_segment(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// Delete a segment. Only the rules go: no contact is changed.
#[utoipa::path(
    delete,
    path = "/api/v1/segments/{id}",
    operation_id = "deleteSegment",
    tag = "segments",
    params(("id" = Uuid, Path, description = "The segment's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a segment of this project, or deleted already (`SEGMENT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_segment(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Preview a segment, saved or not: how many contacts it matches and the first of them.
/// Nothing is stored.
#[utoipa::path(
    post,
    path = "/api/v1/segments/preview",
    operation_id = "previewSegment",
    tag = "segments",
    request_body = PreviewSegment,
    responses(
        (status = 200, description = "The count and a sample", body = SegmentPreview),
        (status = 400, description = "Neither or both of `segment_id` and `rules`, or an invalid field or rule (`details.field` names its path)", body = MailError),
        (status = 404, description = "`segment_id` is not a segment of this project (`SEGMENT_NOT_FOUND`), or a `site_id` rule names a site that is not the project's (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn preview(
    caller: Caller,
    state: web::Data<AppState>,
    body: http_kit::Json<PreviewSegment>,
) -> Result<web::Json<SegmentPreview>, ApiError> {
    preview_segment(&state, caller.owner_id, &body.0.0)
        .await
        .map(web::Json)
}

/// How many contacts a segment (saved or not) matches, and how many of them mail could go
/// to. Counted exactly, now. Nothing is stored.
#[utoipa::path(
    post,
    path = "/api/v1/segments/estimate",
    operation_id = "estimateSegmentSize",
    tag = "segments",
    request_body = EstimateSegmentSize,
    responses(
        (status = 200, description = "The counts", body = SegmentSize),
        (status = 400, description = "Neither or both of `segment_id` and `rules`, or an invalid field or rule (`details.field` names its path)", body = MailError),
        (status = 404, description = "`segment_id` is not a segment of this project (`SEGMENT_NOT_FOUND`), or `site_id` or a `site_id` rule names a site that is not the project's (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn estimate(
    caller: Caller,
    state: web::Data<AppState>,
    body: http_kit::Json<EstimateSegmentSize>,
) -> Result<web::Json<SegmentSize>, ApiError> {
    estimate_segment_size(&state, caller.owner_id, &body.0.0)
        .await
        .map(web::Json)
}

/// The contacts a segment matches now, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/segments/{id}/contacts",
    operation_id = "listSegmentContacts",
    tag = "segments",
    params(("id" = Uuid, Path, description = "The segment's id"), PageParams),
    responses(
        (status = 200, description = "A page of contacts", body = Page<Contact>),
        (status = 400, description = "`id` is not a UUID, or an invalid limit or cursor", body = MailError),
        (status = 404, description = "Not a segment of this project (`SEGMENT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn contacts(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<Contact>>, ApiError> {
    segment_contacts(&state, caller.owner_id, *id, &page)
        .await
        .map(web::Json)
}

/// The contacts a site's win-back segment would target (subscribers who opened or clicked
/// once, but not within `inactive_days`), with the segment's rules to save it.
#[utoipa::path(
    get,
    path = "/api/v1/segments/win-back",
    operation_id = "winBackDraft",
    tag = "segments",
    params(WinBackQuery, PageParams),
    responses(
        (status = 200, description = "The draft: rules, total and a page of contacts", body = WinBackDraft),
        (status = 400, description = "A missing or invalid site_id, inactive_days, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn win_back(
    caller: Caller,
    state: web::Data<AppState>,
    query: Query<WinBackQuery>,
    page: Query<PageParams>,
) -> Result<web::Json<WinBackDraft>, ApiError> {
    win_back_draft(&state, caller.owner_id, &query, &page)
        .await
        .map(web::Json)
}
