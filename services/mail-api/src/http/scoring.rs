//! Engagement scoring: `GET|PUT /api/v1/scoring-rules` (the project's points and half-life)
//! and `GET /api/v1/contacts/{id}/score` (a contact's score with every contribution), over
//! [`crate::ops::scoring`].

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Route, route};

use super::contacts::ContactPath;
use crate::AppState;
use crate::ops::contacts::ContactKey;
use crate::ops::scoring::{
    ScoreExplanation, ScoringRules, UpdateScoringRules, explain_contact_score, get_scoring_rules,
    update_scoring_rules,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(rules), route!(update_rules), route!(score)];

/// The project's scoring rules: points per open, click, conversion, unsubscribe, bounce and
/// complaint, and the half-life of points (the defaults until changed).
#[utoipa::path(
    get,
    path = "/api/v1/scoring-rules",
    operation_id = "getScoringRules",
    tag = "contacts",
    responses(
        (status = 200, description = "The rules", body = ScoringRules),
    )
)]
pub async fn rules(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<ScoringRules>, ApiError> {
    get_scoring_rules(&state, caller.owner_id)
        .await
        .map(web::Json)
}

/// Change the project's scoring rules (members left out keep their value); every contact is
/// rescored by them at once.
#[utoipa::path(
    put,
    path = "/api/v1/scoring-rules",
    operation_id = "updateScoringRules",
    tag = "contacts",
    request_body = UpdateScoringRules,
    responses(
        (status = 200, description = "The rules as set", body = ScoringRules),
        (status = 400, description = "An invalid or unknown field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn update_rules(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<UpdateScoringRules>,
) -> Result<web::Json<ScoringRules>, ApiError> {
    update_scoring_rules(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// A contact's engagement score now, with each contribution (its points, age and decay).
#[utoipa::path(
    get,
    path = "/api/v1/contacts/{id}/score",
    operation_id = "explainContactScore",
    tag = "contacts",
    params(ContactPath),
    responses(
        (status = 200, description = "The score and its contributions", body = ScoreExplanation),
        (status = 400, description = "`id` is neither a UUID nor an email address", body = MailError),
        (status = 404, description = "No such contact in the project (`CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn score(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ScoreExplanation>, ApiError> {
    let key = ContactKey::parse(&path)?;
    explain_contact_score(&state, caller.owner_id, &key)
        .await
        .map(web::Json)
}
