//! A/B tests: `GET|POST /api/v1/ab-tests`, `GET /api/v1/ab-tests/{id}`,
//! `GET /api/v1/ab-tests/{id}/significance` and `POST /api/v1/ab-tests/{id}/promote`. The use
//! cases are in [`crate::ops::ab_tests`]; promotion goes through the approval policy
//! ([`crate::ops::approvals::gate::promote_ab_winner_gated`]).

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{Answer, IdempotencyHeader, IdempotencyKey};
use crate::AppState;
use crate::ops::ab_tests::{
    AbTestFilter, AbTestPromotion, AbTestRecord, CreateAbTest, PromoteAbWinner, Significance,
    check_ab_significance, create_ab_test, get_ab_test, list_ab_tests,
};
use crate::ops::approvals::ApprovalRequired;
use crate::ops::approvals::gate::promote_ab_winner_gated;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(get),
    route!(significance),
    route!(promote),
];

/// List the project's A/B tests, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/ab-tests",
    operation_id = "listAbTests",
    tag = "ab-tests",
    params(AbTestFilter, PageParams),
    responses(
        (status = 200, description = "A page of A/B tests", body = Page<AbTestRecord>),
        (status = 400, description = "Invalid limit, cursor or campaign_id", body = MailError),
        (status = 404, description = "`campaign_id` is not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<AbTestFilter>,
) -> Result<web::Json<Page<AbTestRecord>>, ApiError> {
    list_ab_tests(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Create an A/B test of a campaign's first step, before the campaign sends.
#[utoipa::path(
    post,
    path = "/api/v1/ab-tests",
    operation_id = "createAbTest",
    tag = "ab-tests",
    request_body = CreateAbTest,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed), status `running`", body = AbTestRecord,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer")),
            links(
                ("GetAbTest" = (operation_id = "getAbTest", parameters(("id" = "$response.body#/id")))),
                ("CheckAbSignificance" = (operation_id = "checkAbSignificance", parameters(("id" = "$response.body#/id")))),
            )),
        (status = 400, description = "Missing or invalid field (named in `details.field`), template syntax that does not compile (`TEMPLATE_SYNTAX`), bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`campaign_id` is not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The campaign has started sending or is over (`CONFLICT`), has a test already (`AB_TEST_EXISTS`), has no step (`CAMPAIGN_NOT_READY`), or the Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateAbTest>,
) -> Result<Answer, ApiError> {
    create_ab_test(&state, caller.owner_id, &key, &body).await
}

/// One A/B test.
#[utoipa::path(
    get,
    path = "/api/v1/ab-tests/{id}",
    operation_id = "getAbTest",
    tag = "ab-tests",
    params(("id" = Uuid, Path, description = "The test's id")),
    responses(
        (status = 200, description = "The test", body = AbTestRecord),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a test of this project (`AB_TEST_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<AbTestRecord>, ApiError> {
    get_ab_test(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Each variant's rate with its Wilson interval, the leader, Pearson's chi-squared test and
/// whether the decision rule is met.
#[utoipa::path(
    get,
    path = "/api/v1/ab-tests/{id}/significance",
    operation_id = "checkAbSignificance",
    tag = "ab-tests",
    params(("id" = Uuid, Path, description = "The test's id")),
    responses(
        (status = 200, description = "The test's results", body = Significance),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a test of this project (`AB_TEST_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn significance(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Significance>, ApiError> {
    check_ab_significance(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Send the winner (the leader unless `variant` is named) to the contacts held back, once.
#[utoipa::path(
    post,
    path = "/api/v1/ab-tests/{id}/promote",
    operation_id = "promoteAbWinner",
    tag = "ab-tests",
    params(("id" = Uuid, Path, description = "The test's id")),
    request_body = PromoteAbWinner,
    responses(
        (status = 200, description = "Promoted: the scheduler sends the winner to the contacts held back", body = AbTestPromotion),
        (status = 202, description = "Waits for a person's approval under the project's approval policy (the one that holds campaign launches): nothing was done", body = ApprovalRequired),
        (status = 400, description = "`id` is not a UUID, or `variant` is not a variant of the test", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a test of this project (`AB_TEST_NOT_FOUND`)", body = MailError),
        (status = 409, description = "Promoted already (`AB_TEST_PROMOTED`), or no variant has recipients and none was named (`CONFLICT`)", body = MailError),
    )
)]
pub async fn promote(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<PromoteAbWinner>,
) -> Result<Answer, ApiError> {
    promote_ab_winner_gated(&state, state.gates.view(synced), &caller, *id, &body).await
}
