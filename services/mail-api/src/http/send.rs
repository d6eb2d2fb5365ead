//! `POST /api/v1/send`: one transactional email, sent now.
//!
//! The route reads and validates the request, [`crate::ops::send`] and
//! [`crate::sending::accept`] do the rest (replay,
//! checks, quota, write, hand-over to the worker), and the answer is 200 `sent`, else 202
//! `queued` (the email is still sent, exactly once).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use serde::Serialize;
use utoipa::ToSchema;

use super::idempotency::REPLAYED_HEADER;
use crate::AppState;
use crate::ops::approvals::ApprovalRequired;
use crate::ops::approvals::gate::{Gated, send_email_gated};
use crate::ops::send::SendRequest;
use crate::sending::{Accepted, SendResponse};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(send)];

/// Send one transactional email.
#[utoipa::path(
    post,
    path = "/api/v1/send",
    operation_id = "send",
    tag = "send",
    request_body = SendRequest,
    responses(
        (status = 200, description = "The provider accepted the message (`status: sent`); also the replay of an earlier request with the same `idempotency_key` that was answered 200 (`Idempotent-Replayed: true`)", body = SendResponse),
        (status = 202, description = "Accepted and queued: the worker did not answer within the wait; the email is still sent exactly once (`status: queued`); also the replay of an earlier request with the same `idempotency_key` that was answered 202, whatever the email became since (`Idempotent-Replayed: true`). Or, once the project wrote its day's allowance of transactional emails, held back for a person's approval under the project's approval policy (`approval_required: true`): nothing was sent", body = SendAccepted),
        (status = 400, description = "Missing or invalid field (address syntax, subject over 998 characters, a header a sender may not set, both or neither of `html` and `template_id`, named), a template syntax error (`TEMPLATE_SYNTAX`, naming the field, line and column in `details`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`), or `template_id` not a template of the project (`TEMPLATE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "`idempotency_key` already used with a different request (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
        (status = 422, description = "The recipient is suppressed (`SUPPRESSED_CONTACT`), the plan's monthly send quota is used up (`PLAN_LIMIT`), the provider refused the message for good (`PROVIDER_REJECTED`), or the abuse monitor stopped the site's mail (`SENDER_SUSPENDED`: its bounce or complaint rate crossed the hard threshold)", body = MailError),
    )
)]
pub async fn send(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    body: http_kit::Json<SendRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(
        match send_email_gated(&state, state.gates.view(synced), &caller, &body).await? {
            Gated::Done(accepted) => respond(accepted),
            Gated::Pending(pending) => HttpResponse::Accepted().json(pending),
        },
    )
}

/// What a 202 of `POST /send` carries: the email queued, or the approval it waits for.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum SendAccepted {
    Queued(SendResponse),
    ApprovalRequired(ApprovalRequired),
}

/// 200 `sent`, else 202 `queued`; marked when replayed.
fn respond(accepted: Accepted) -> HttpResponse {
    let status = if accepted.answer.is_sent() {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    let mut response = HttpResponse::build(status);
    if accepted.replayed {
        response.insert_header((REPLAYED_HEADER, "true"));
    }
    response.json(accepted.answer)
}
