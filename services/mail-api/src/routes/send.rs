//! `POST /api/v1/send`: one transactional email, sent now.
//!
//! Validation; an idempotency key already used answers at once; the site (404) and the
//! suppression list (422 `SUPPRESSED_CONTACT`) in one read; the plan's monthly quota (422
//! `PLAN_LIMIT`), counted by a statement of its own so that the project's counter row is not
//! locked for the rest of the request; then the email log row, its event and its outbox job in
//! one statement (with a key, in a transaction serialised on it). After the commit the job is
//! published to the send worker and the route waits a bounded time for the provider's answer:
//! 200 `sent`, else 202 `queued` (the email is still sent, exactly once).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use diesel_async::AsyncConnection as _;
use http_kit::openapi::MailError;
use http_kit::request::{trim, trim_and_dedupe};
use http_kit::{ApiError, Validate};
use queue::Task;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::body::{normalize_email, tags_schema};
use super::idempotency::REPLAYED_HEADER;
use crate::db::emails::{self, NewEmail};
use crate::db::outbox;
use crate::sending::{Dispatched, SendResult};
use crate::{AppState, flows, worker};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/send").route(web::post().to(send)));
}

/// Unknown fields are ignored.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SendRequest {
    /// Recipient; stored trimmed and lowercased.
    #[schema(format = Email)]
    pub to: String,
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): the sender is
    /// `<slug>@<shared sending domain>` with the site's `from_name`.
    pub site_id: Uuid,
    /// 1..=998 characters, not blank, one line.
    #[schema(min_length = 1, max_length = 998, pattern = "\\S")]
    pub subject: String,
    /// Not blank, at most 524,288 characters.
    #[schema(min_length = 1, max_length = 524288, pattern = "\\S")]
    pub html: String,
    /// At most 524,288 characters; empty is absent.
    #[schema(max_length = 524288)]
    pub text: Option<String>,
    #[schema(format = Email)]
    pub reply_to: Option<String>,
    /// Custom headers, name to value (at most 50); the service's own (From, To, Subject,
    /// Message-ID, …) cannot be set.
    #[schema(schema_with = headers_schema)]
    pub headers: Option<Map<String, Value>>,
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// The same key with the same request answers the first result again
    /// (`Idempotent-Replayed: true`) and sends nothing; with another request, 409
    /// `IDEMPOTENCY_KEY_REUSED`. 1..=255 characters, not blank (trimmed).
    #[serde(skip_serializing)]
    #[schema(min_length = 1, max_length = 255, pattern = "\\S")]
    pub idempotency_key: Option<String>,
    /// Default true: open pixel and click-tracking links.
    #[serde(default = "tracking_default")]
    #[schema(required = false, default = true)]
    pub tracking: bool,
}

/// An object of at most 50 string members.
fn headers_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(ObjectBuilder::new().schema_type(Type::String)))
        .max_properties(Some(50))
        .build()
}

fn tracking_default() -> bool {
    true
}

impl Validate for SendRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("to", &mut self.to)?;
        if let Some(reply_to) = &mut self.reply_to {
            normalize_email("reply_to", reply_to)?;
        }
        if self.text.as_deref().is_some_and(str::is_empty) {
            self.text = None;
        }
        if let Some(key) = &mut self.idempotency_key {
            trim(key);
        }
        trim_and_dedupe(&mut self.tags);
        Ok(())
    }
}

impl SendRequest {
    /// What the providers will check, checked now (header names and values, one-line
    /// subject, addresses), so that a bad request is a 400 and not a failed send.
    fn check_deliverable(&self, shared_domain: &str) -> Result<(), ApiError> {
        let probe = delivery::OutgoingEmail {
            id: Uuid::nil(),
            from_name: String::new(),
            from_address: format!("probe@{shared_domain}"),
            to: self.to.clone(),
            reply_to: self.reply_to.clone(),
            subject: self.subject.clone(),
            html: String::new(),
            text: None,
            headers: self.header_pairs(),
            tags: Vec::new(),
        };
        probe.validate().map_err(|err| match err {
            delivery::EmailError::Invalid { field, message } => {
                ApiError::invalid_field(field, &message)
            }
        })
    }

    fn header_pairs(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect()
    }
}

/// The answer of `POST /send`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SendResponse {
    /// The email log id.
    pub id: Uuid,
    /// The provider's id of the message; null while queued.
    pub provider_message_id: Option<String>,
    pub to: String,
    /// `sent` (200) or `queued` (202).
    #[schema(example = "sent")]
    pub status: String,
}

/// Send one transactional email.
#[utoipa::path(
    post,
    path = "/api/v1/send",
    operation_id = "send",
    tag = "send",
    request_body = SendRequest,
    responses(
        (status = 200, description = "The provider accepted the message (`status: sent`); also the replay of an earlier request with the same `idempotency_key` (`Idempotent-Replayed: true`)", body = SendResponse),
        (status = 202, description = "Accepted and queued: the worker did not answer within the wait; the email is still sent exactly once (`status: queued`)", body = SendResponse),
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
    body: http_kit::Json<SendRequest>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    req.check_deliverable(&state.shared_domain)?;
    let project_id = caller.owner_id;
    let plan = flows::plan_of(&caller);
    let quota = state
        .send
        .quotas
        .monthly_sends(plan)
        .map(|q| i64::try_from(q).unwrap_or(i64::MAX));
    let request_hash = store::sha256(&serde_json::to_vec(&req)?);
    let id = Uuid::now_v7();
    let task = Task::SendEmail {
        email_log_id: id,
        project_id,
    };
    let queue_name = state.send.dispatcher.queue_name();
    let mut conn = store::conn(&state.pool).await?;
    // A replay answers before anything is checked or counted.
    if let Some(key) = req.idempotency_key.as_deref()
        && let Some(row) = emails::find_by_key(&mut conn, project_id, key).await?
    {
        return replay(&row, &request_hash);
    }
    let checks = emails::send_checks(&mut conn, project_id, req.site_id, &req.to).await?;
    if !checks.site_exists {
        return Err(flows::site_not_found(req.site_id));
    }
    if checks.suppressed {
        return Err(suppressed(&req.to, None));
    }
    let headers = serde_json::to_value(req.header_pairs())?;
    let Some(reserved) = emails::reserve_monthly_send(&mut conn, project_id, quota).await? else {
        return Err(ApiError::unprocessable(format!(
            "monthly send quota reached: the {plan} plan allows {} emails a month",
            quota.unwrap_or(i64::MAX)
        ))
        .with_code("PLAN_LIMIT")
        .with_details(serde_json::json!({
            "limit": "monthly_sends",
            "plan": plan.as_str(),
            "max": quota,
        })));
    };
    let new = NewEmail {
        id,
        project_id,
        site_id: req.site_id,
        contact_id: checks.contact_id,
        to_email: &req.to,
        subject: &req.subject,
        html: Some(&req.html),
        text_body: req.text.as_deref(),
        reply_to: req.reply_to.as_deref(),
        headers,
        tags: &req.tags,
        tracking: req.tracking,
        idempotency_key: req.idempotency_key.as_deref(),
        request_hash: req.idempotency_key.as_ref().map(|_| &request_hash[..]),
    };
    let job = task.to_value();
    let written = match req.idempotency_key.as_deref() {
        // One statement: the email, its event and its outbox job, atomically.
        None => emails::insert(&mut conn, new, &queue_name, &job)
            .await
            .map(|()| None)
            .map_err(ApiError::from),
        Some(key) => {
            conn.transaction::<_, ApiError, _>(async |conn| {
                // Another request with this key may have got here first.
                emails::lock_key(conn, project_id, key).await?;
                if let Some(row) = emails::find_by_key(conn, project_id, key).await? {
                    return Ok(Some(row));
                }
                emails::insert(conn, new, &queue_name, &job).await?;
                Ok(None)
            })
            .await
        }
    };
    match written {
        Ok(None) => {}
        Ok(Some(first)) => {
            release(&mut conn, project_id, reserved).await;
            return replay(&first, &request_hash);
        }
        Err(err) => {
            release(&mut conn, project_id, reserved).await;
            return Err(err);
        }
    }
    // The connection is not needed while waiting for the worker.
    drop(conn);
    let result = match state.send.dispatcher.call(&task).await {
        Dispatched::Answered(result) => {
            forget_job(&state, id).await;
            result
        }
        Dispatched::Queued => {
            forget_job(&state, id).await;
            mark_queued(&state, project_id, id).await;
            queued(id, &req.to)
        }
        // The outbox row stays: the relay publishes it.
        Dispatched::NotPublished => {
            mark_queued(&state, project_id, id).await;
            queued(id, &req.to)
        }
    };
    respond(result, false)
}

/// The earlier answer to the same `idempotency_key`, or 409 when the request differs.
fn replay(first: &emails::Email, request_hash: &[u8]) -> Result<HttpResponse, ApiError> {
    if first.request_hash.as_deref() != Some(request_hash) {
        return Err(ApiError::conflict(
            "this idempotency_key was already used with a different request",
        )
        .with_code("IDEMPOTENCY_KEY_REUSED"));
    }
    respond(worker::result_of(first), true)
}

/// Gives back the send a request reserved but did not use (should that fail, the month's
/// count stays one too high: the error is on the safe side of the quota).
async fn release(
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
    reserved: emails::Reserved,
) {
    if let Err(err) = emails::release_monthly_send(conn, project_id, reserved).await {
        tracing::warn!(%project_id, error = %err, "a reserved send was not given back");
    }
}

/// The answer says `queued`: so does the log, unless the worker got further meanwhile.
async fn mark_queued(state: &AppState, project_id: Uuid, id: Uuid) {
    let marked = async {
        let mut conn = store::conn(&state.pool).await?;
        emails::mark_queued(&mut conn, project_id, id).await?;
        Ok::<_, ApiError>(())
    }
    .await;
    if let Err(err) = marked {
        tracing::warn!(%id, error = %err, "email not marked queued");
    }
}

/// The job was published: the outbox row is no longer needed (if this fails, the relay
/// publishes a duplicate, which the worker recognises).
async fn forget_job(state: &AppState, id: Uuid) {
    let deleted = async {
        let mut conn = store::conn(&state.pool).await?;
        outbox::delete(&mut conn, id).await?;
        Ok::<_, ApiError>(())
    }
    .await;
    if let Err(err) = deleted {
        tracing::warn!(%id, error = %err, "outbox row not deleted; the relay will republish");
    }
}

fn queued(id: Uuid, to: &str) -> SendResult {
    SendResult {
        id,
        to: to.to_owned(),
        status: "queued".to_owned(),
        provider_message_id: None,
        error: None,
    }
}

fn suppressed(to: &str, id: Option<Uuid>) -> ApiError {
    let mut details = serde_json::json!({"to": to});
    if let Some(id) = id {
        details["id"] = id.to_string().into();
    }
    ApiError::unprocessable(format!("{to} is suppressed: nothing is sent to it"))
        .with_code("SUPPRESSED_CONTACT")
        .with_details(details)
}

fn respond(result: SendResult, replayed: bool) -> Result<HttpResponse, ApiError> {
    let status = match result.status.as_str() {
        "sent" => StatusCode::OK,
        "suppressed" => return Err(suppressed(&result.to, Some(result.id))),
        "failed" => {
            return Err(ApiError::unprocessable(format!(
                "the provider refused the message: {}",
                result.error.as_deref().unwrap_or("no reason given")
            ))
            .with_code("PROVIDER_REJECTED")
            .with_details(serde_json::json!({"id": result.id})));
        }
        _ => StatusCode::ACCEPTED,
    };
    let body = SendResponse {
        id: result.id,
        provider_message_id: result.provider_message_id,
        to: result.to,
        status: if status == StatusCode::OK {
            "sent".to_owned()
        } else {
            "queued".to_owned()
        },
    };
    let mut response = HttpResponse::build(status);
    if replayed {
        response.insert_header((REPLAYED_HEADER, "true"));
    }
    Ok(response.json(body))
}
