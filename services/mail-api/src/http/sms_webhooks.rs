//! Twilio's callbacks for a project (public: the signature is the credential):
//! `POST /api/webhooks/sms/twilio/{project_id}/inbound` (a text received: STOP and its
//! variants revoke the number's consent, START and its variants restore it, HELP is answered;
//! the answer is TwiML) and `…/status` (a text's delivery status). Each is verified with
//! `X-Twilio-Signature` (base64 HMAC-SHA1 of the full URL and the sorted form fields, keyed
//! with the project's auth token, compared in constant time): missing or wrong answers 401.

use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::sms::{TwilioAnswer, TwilioCallback, receive_twilio};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(inbound), route!(status)];

/// Receive a text sent to the project's number (Twilio's "A message comes in" webhook).
#[utoipa::path(post, path = "/api/webhooks/sms/twilio/{project_id}/inbound",
    operation_id = "receiveTwilioInbound", tag = "sms",
    params(
        ("project_id" = Uuid, Path, description = "The project whose number received it"),
        ("X-Twilio-Signature" = String, Header, description = "Twilio's signature of the request"),
    ),
    request_body(content = Object, content_type = "application/x-www-form-urlencoded",
        description = "Twilio's fields: `MessageSid`, `From`, `To`, `Body`, …"),
    responses(
        (status = 200, description = "TwiML: the reply a keyword requires (STOP, START, HELP), else an empty `<Response/>`", content_type = "text/xml", body = String),
        (status = 400, description = "A required field is missing (`MessageSid`, `From`) or the body is not a form", body = MailError),
        (status = 401, description = "Missing or wrong signature (`INVALID_SIGNATURE`)", body = MailError),
        (status = 404, description = "No such project, or it has no SMS provider", body = MailError),
    ))]
pub async fn inbound(
    state: web::Data<AppState>,
    req: HttpRequest,
    project: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    receive(&state, &req, &project, TwilioCallback::Inbound, &body).await
}

/// Receive a text's status from Twilio (the `StatusCallback` each text is sent with).
#[utoipa::path(post, path = "/api/webhooks/sms/twilio/{project_id}/status",
    operation_id = "receiveTwilioStatus", tag = "sms",
    params(
        ("project_id" = Uuid, Path, description = "The project that sent the text"),
        ("X-Twilio-Signature" = String, Header, description = "Twilio's signature of the request"),
    ),
    request_body(content = Object, content_type = "application/x-www-form-urlencoded",
        description = "Twilio's fields: `MessageSid`, `MessageStatus`, `ErrorCode`, …"),
    responses(
        (status = 204, description = "Recorded (a status of a text this project never sent changes nothing)"),
        (status = 400, description = "A required field is missing (`MessageSid`, `MessageStatus`) or the body is not a form", body = MailError),
        (status = 401, description = "Missing or wrong signature (`INVALID_SIGNATURE`)", body = MailError),
        (status = 404, description = "No such project, or it has no SMS provider", body = MailError),
    ))]
pub async fn status(
    state: web::Data<AppState>,
    req: HttpRequest,
    project: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    receive(&state, &req, &project, TwilioCallback::Status, &body).await
}

async fn receive(
    state: &AppState,
    req: &HttpRequest,
    project: &str,
    kind: TwilioCallback,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let signature = req
        .headers()
        .get("X-Twilio-Signature")
        .and_then(|v| v.to_str().ok());
    if signature.is_none() {
        return Err(ApiError::unauthorized("missing X-Twilio-Signature")
            .with_code(crate::domain::error_code::MailErrorCode::InvalidSignature));
    }
    // A project id that is not a UUID names no project.
    let project_id = Uuid::parse_str(project).map_err(|_| {
        ApiError::not_found("no such project")
            .with_code(crate::domain::error_code::MailErrorCode::ProjectNotFound)
    })?;
    let params: Vec<(String, String)> = serde_urlencoded::from_bytes(body).map_err(|_| {
        ApiError::bad_request("the body is not a form (application/x-www-form-urlencoded)")
    })?;
    // What Twilio signed: the public address it was given, with the query string.
    let path_and_query = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.path().to_owned(), |pq| pq.as_str().to_owned());
    let url = format!("{}{path_and_query}", state.sms.public_base);
    match receive_twilio(state, project_id, kind, &url, signature, &params).await? {
        TwilioAnswer::Twiml(xml) => Ok(HttpResponse::Ok()
            .content_type("text/xml; charset=utf-8")
            .body(xml)),
        TwilioAnswer::Empty => Ok(HttpResponse::NoContent().finish()),
    }
}
