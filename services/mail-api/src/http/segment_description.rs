//! `POST /api/v1/segments/from-description`: a segment whose rules the language model writes
//! from a description in plain words ([`crate::ops::segments::description`]); nothing is
//! saved unless the rules hold.

use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
use crate::ops::segments::{
    DescribeSegment, Segment, SegmentOrigin, describe_segment, insert_segment,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(create)];

const ROUTE: &str = "POST /api/v1/segments/from-description";

/// Create a segment from a description: the language model writes the rules, the service
/// checks them as it checks any rules, and saves the segment (`origin: description`).
#[utoipa::path(
    post,
    path = "/api/v1/segments/from-description",
    operation_id = "createSegmentFromDescription",
    tag = "segments",
    request_body = DescribeSegment,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed): the segment with the model's rules", body = Segment,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "A missing or invalid field (named in `details.field`), a bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
        (status = 422, description = "No language model is configured (`LLM_NOT_CONFIGURED`), the model failed or did not answer (`LLM_FAILED`), or its rules were refused twice (`LLM_INVALID_RULES`, the refusal in the message); nothing is saved", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<DescribeSegment>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let project_id = caller.owner_id;
    let idempotent = Idempotent::new(project_id, ROUTE, &key, &req)?;
    let segment = describe_segment(&state, project_id, &req).await?;
    idempotent
        .create_once(&state.pool, async |conn| {
            insert_segment(conn, project_id, &segment, SegmentOrigin::Description).await
        })
        .await
}
