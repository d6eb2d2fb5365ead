//! `POST /api/v1/send`: one transactional email, sent now.
//!
//! The route reads and validates the request, [`sending::accept`] does the rest (replay,
//! checks, quota, write, hand-over to the worker), and the answer is 200 `sent`, else 202
//! `queued` (the email is still sent, exactly once).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::body::{Fields, check_text};
use super::idempotency::REPLAYED_HEADER;
use crate::sending::{self, Accepted, SendResponse, Sender, Submission};
use crate::{AppState, flows};

pub const SUBJECT_MAX: usize = 998;
const HTML_MAX: usize = 512 * 1024;
const HEADERS_MAX: usize = 50;
const KEY_MAX: usize = 255;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/send").route(web::post().to(send)));
}

/// Unknown fields are ignored.
#[derive(Debug, Serialize, ToSchema)]
pub struct SendRequest {
    /// Recipient; stored trimmed and lowercased.
    pub to: String,
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): the sender is
    /// `<slug>@<shared sending domain>` with the site's `from_name`.
    pub site_id: Uuid,
    /// 1..=998 characters, one line.
    pub subject: String,
    pub html: String,
    pub text: Option<String>,
    pub reply_to: Option<String>,
    /// Custom headers (at most 50); the service's own (From, To, Subject, Message-ID, …)
    /// cannot be set.
    #[schema(value_type = Option<Object>)]
    pub headers: Option<Map<String, Value>>,
    #[schema(required = false)]
    pub tags: Vec<String>,
    /// The same key with the same request answers the first result again
    /// (`Idempotent-Replayed: true`) and sends nothing; with another request, 409
    /// `IDEMPOTENCY_KEY_REUSED`. 1..=255 characters.
    #[serde(skip_serializing)]
    pub idempotency_key: Option<String>,
    /// Default true: open pixel and click-tracking links.
    #[schema(required = false, default = true)]
    pub tracking: bool,
}

impl SendRequest {
    fn read(body: Value, shared_domain: &str) -> Result<Self, ApiError> {
        let raw = body.clone();
        let f = Fields::new(body)?;
        let site_id = f
            .uuid("site_id")?
            .ok_or_else(|| ApiError::invalid_field("site_id", "is required"))?;
        let to = f.email("to")?;
        let subject = f.required_string("subject")?;
        if subject.trim().is_empty() {
            return Err(ApiError::invalid_field("subject", "is required"));
        }
        if subject.chars().count() > SUBJECT_MAX {
            return Err(ApiError::invalid_field(
                "subject",
                "must be at most 998 characters",
            ));
        }
        let html = f.required_string("html")?;
        if html.trim().is_empty() {
            return Err(ApiError::invalid_field("html", "is required"));
        }
        if html.len() > HTML_MAX {
            return Err(ApiError::invalid_field("html", "must be at most 512 KiB"));
        }
        let text = f.string("text")?.filter(|t| !t.is_empty());
        if text.as_ref().is_some_and(|t| t.len() > HTML_MAX) {
            return Err(ApiError::invalid_field("text", "must be at most 512 KiB"));
        }
        let reply_to = match f.string("reply_to")? {
            None => None,
            Some(r) => Some(crate::domain::email::normalize(&r).ok_or_else(|| {
                ApiError::invalid_field("reply_to", "is not a valid email address")
            })?),
        };
        let headers = match raw.get("headers") {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => {
                if map.len() > HEADERS_MAX {
                    return Err(ApiError::invalid_field(
                        "headers",
                        "has more than 50 headers",
                    ));
                }
                if map.values().any(|v| !v.is_string()) {
                    return Err(ApiError::invalid_field(
                        "headers",
                        "must be an object of strings",
                    ));
                }
                Some(map.clone())
            }
            Some(_) => {
                return Err(ApiError::invalid_field(
                    "headers",
                    "must be an object of strings",
                ));
            }
        };
        let tracking = match raw.get("tracking") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(ApiError::invalid_field("tracking", "must be a boolean")),
        };
        let idempotency_key = match f.string("idempotency_key")? {
            None => None,
            Some(k) => Some(
                check_text("idempotency_key", &k, KEY_MAX)
                    .map_err(|_| {
                        ApiError::invalid_field("idempotency_key", "must be 1 to 255 characters")
                    })?
                    .to_owned(),
            ),
        };
        let req = Self {
            to,
            site_id,
            subject,
            html,
            text,
            reply_to,
            headers,
            tags: f.tags("tags")?,
            idempotency_key,
            tracking,
        };
        // What the providers will check, checked now (header names and values, one-line
        // subject, addresses), so that a bad request is a 400 and not a failed send.
        let probe = delivery::OutgoingEmail {
            id: Uuid::nil(),
            from_name: String::new(),
            from_address: format!("probe@{shared_domain}"),
            to: req.to.clone(),
            reply_to: req.reply_to.clone(),
            subject: req.subject.clone(),
            html: String::new(),
            text: None,
            headers: req.header_pairs(),
            tags: Vec::new(),
        };
        probe.validate().map_err(|err| match err {
            delivery::EmailError::Invalid { field, message } => {
                ApiError::invalid_field(field, &message)
            }
        })?;
        Ok(req)
    }

    fn header_pairs(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect()
    }
}

/// Send one transactional email.
#[utoipa::path(
    post,
    path = "/api/v1/send",
    operation_id = "send",
    tag = "send",
    request_body = SendRequest,
    responses(
        (status = 200, description = "The provider accepted the message (`status: sent`); also the replay of an earlier request with the same `idempotency_key` that was answered 200 (`Idempotent-Replayed: true`)", body = SendResponse),
        (status = 202, description = "Accepted and queued: the worker did not answer within the wait; the email is still sent exactly once (`status: queued`); also the replay of an earlier request with the same `idempotency_key` that was answered 202, whatever the email became since (`Idempotent-Replayed: true`)", body = SendResponse),
        (status = 400, description = "Missing or invalid field (address syntax, subject over 998 characters, reserved header), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "`idempotency_key` already used with a different request (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
        (status = 422, description = "The recipient is suppressed (`SUPPRESSED_CONTACT`), the plan's monthly send quota is used up (`PLAN_LIMIT`), or the provider refused the message for good (`PROVIDER_REJECTED`)", body = MailError),
    )
)]
pub async fn send(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let req = SendRequest::read(body.into_inner(), &state.shared_domain)?;
    let sender = Sender {
        project_id: caller.owner_id,
        plan: flows::plan_of(&caller),
    };
    let accepted = sending::accept(&state.pool, &state.send, sender, &req.submission()?).await?;
    Ok(respond(accepted))
}

impl SendRequest {
    /// The request as [`sending::accept`] takes it.
    fn submission(&self) -> Result<Submission<'_>, ApiError> {
        Ok(Submission {
            site_id: self.site_id,
            to: &self.to,
            subject: &self.subject,
            html: &self.html,
            text: self.text.as_deref(),
            reply_to: self.reply_to.as_deref(),
            headers: self.header_pairs(),
            tags: &self.tags,
            tracking: self.tracking,
            idempotency_key: self.idempotency_key.as_deref(),
            request_hash: store::sha256(&serde_json::to_vec(self)?),
        })
    }
}

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
