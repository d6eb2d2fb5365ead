//! Drafts: `GET|POST /api/v1/drafts`, `GET /api/v1/drafts/{id}` and
//! `POST /api/v1/drafts/{id}/approve|reject|promote`. The use cases are in
//! [`crate::ops::drafts`].

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{Answer, IdempotencyHeader, IdempotencyKey};
use crate::AppState;
use crate::ops::drafts::{
    CreateDraft, DraftFilter, DraftRecord, PromoteDraft, Promoted, RejectDraft, approve_draft,
    create_draft, get_draft, list_drafts, promote_draft, reject_draft,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(get),
    route!(approve),
    route!(reject),
    route!(promote),
];

/// List the project's drafts, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/drafts",
    operation_id = "listDrafts",
    tag = "drafts",
    params(DraftFilter, PageParams),
    responses(
        (status = 200, description = "A page of drafts", body = Page<DraftRecord>),
        (status = 400, description = "Invalid limit, cursor, site_id or status", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<DraftFilter>,
) -> Result<web::Json<Page<DraftRecord>>, ApiError> {
    list_drafts(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Write a draft email for a site; it waits, `pending`, for a person's decision.
#[utoipa::path(
    post,
    path = "/api/v1/drafts",
    operation_id = "createDraft",
    tag = "drafts",
    request_body = CreateDraft,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed), status `pending`", body = DraftRecord,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer")),
            links(
                ("GetDraft" = (operation_id = "getDraft", parameters(("id" = "$response.body#/id")))),
            )),
        (status = 400, description = "Missing or invalid field (named in `details.field`), bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateDraft>,
) -> Result<Answer, ApiError> {
    create_draft(&state, caller.owner_id, &key, &body).await
}

/// One draft.
#[utoipa::path(
    get,
    path = "/api/v1/drafts/{id}",
    operation_id = "getDraft",
    tag = "drafts",
    params(("id" = Uuid, Path, description = "The draft's id")),
    responses(
        (status = 200, description = "The draft", body = DraftRecord),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a draft of this project (`DRAFT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<DraftRecord>, ApiError> {
    get_draft(&state, caller.owner_id, *id).await.map(web::Json)
}

/// Approve a pending draft (a person's credential: an OAuth client's token answers 403).
/// Approving it again changes nothing.
#[utoipa::path(
    post,
    path = "/api/v1/drafts/{id}/approve",
    operation_id = "approveDraft",
    tag = "drafts",
    params(("id" = Uuid, Path, description = "The draft's id")),
    responses(
        (status = 200, description = "The draft, `approved`", body = DraftRecord),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope, or the credential is an OAuth client's token", body = MailError),
        (status = 404, description = "Not a draft of this project (`DRAFT_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The draft was rejected or promoted already (`INVALID_TRANSITION`)", body = MailError),
    )
)]
pub async fn approve(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<DraftRecord>, ApiError> {
    approve_draft(&state, &caller, *id).await.map(web::Json)
}

/// Reject a pending draft, saying why (a person's credential: an OAuth client's token answers
/// 403). Rejecting it again changes nothing.
#[utoipa::path(
    post,
    path = "/api/v1/drafts/{id}/reject",
    operation_id = "rejectDraft",
    tag = "drafts",
    params(("id" = Uuid, Path, description = "The draft's id")),
    request_body = RejectDraft,
    responses(
        (status = 200, description = "The draft, `rejected`", body = DraftRecord),
        (status = 400, description = "`id` is not a UUID, an invalid field (named in `details.field`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope, or the credential is an OAuth client's token", body = MailError),
        (status = 404, description = "Not a draft of this project (`DRAFT_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The draft was approved or promoted already (`INVALID_TRANSITION`)", body = MailError),
    )
)]
pub async fn reject(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<RejectDraft>,
) -> Result<web::Json<DraftRecord>, ApiError> {
    reject_draft(&state, &caller, *id, &body)
        .await
        .map(web::Json)
}

/// Make an approved draft a campaign's step: the last step of `campaign_id`, or the first of
/// a new draft campaign. Once: the draft is then `promoted`.
#[utoipa::path(
    post,
    path = "/api/v1/drafts/{id}/promote",
    operation_id = "promoteDraft",
    tag = "drafts",
    params(("id" = Uuid, Path, description = "The draft's id")),
    request_body = PromoteDraft,
    responses(
        (status = 200, description = "The draft, `promoted`, and its campaign", body = Promoted),
        (status = 400, description = "`id` is not a UUID, an invalid field (named in `details.field`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a draft of this project (`DRAFT_NOT_FOUND`), or `campaign_id` is not a campaign of it (`CAMPAIGN_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The draft is not approved, or was promoted already (`DRAFT_NOT_APPROVED`); the campaign is another site's (`CONFLICT`) or has 50 steps (`TOO_MANY_STEPS`)", body = MailError),
    )
)]
pub async fn promote(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<PromoteDraft>,
) -> Result<web::Json<Promoted>, ApiError> {
    promote_draft(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}
