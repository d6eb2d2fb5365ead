//! SMS: `GET|PUT /api/v1/sms/provider`, `POST /api/v1/sms/send`, `POST /api/v1/sms/campaigns`,
//! `GET /api/v1/sms/log`, `GET /api/v1/sms/inbound`, `PUT /api/v1/sms/contacts/{id}/consent`
//! and `POST /api/v1/sms/cost-preview` ([`crate::ops::sms`]); Twilio's callbacks are
//! [`super::sms_webhooks`].

use actix_web::{HttpResponse, web};
use auth::{AdminAccess, Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{Answer, IdempotencyHeader, IdempotencyKey};
use crate::AppState;
use crate::ops::approvals::ApprovalRequired;
use crate::ops::approvals::gate::send_sms_campaign_gated;
use crate::ops::sms::{
    ContactSmsConsent, SendSmsCampaign, SendSmsRequest, SmsCampaign, SmsConsentRequest,
    SmsCostPreview, SmsCostRequest, SmsInboundMessage, SmsLogFilter, SmsMessage,
    SmsProviderRequest, SmsProviderStatus, get_sms_provider_status, list_sms_inbound, list_sms_log,
    preview_sms_cost, put_sms_provider, send_sms, set_contact_sms_consent,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(provider_status),
    route!(set_provider),
    route!(send),
    route!(campaign),
    route!(log),
    route!(inbound),
    route!(consent),
    route!(cost_preview),
];

/// The project's SMS provider (never its auth token), its credentials checked with Twilio
/// now, the addresses to give Twilio, and the last 24 hours' texts by status.
#[utoipa::path(
    get,
    path = "/api/v1/sms/provider",
    operation_id = "getSmsProviderStatus",
    tag = "sms",
    responses(
        (status = 200, description = "The provider (`configured: false` without one)", body = SmsProviderStatus),
    )
)]
pub async fn provider_status(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<SmsProviderStatus>, ApiError> {
    get_sms_provider_status(&state, caller.owner_id)
        .await
        .map(web::Json)
}

/// Set the project's SMS provider (Twilio): its account SID, auth token (sealed) and number.
#[utoipa::path(
    put,
    path = "/api/v1/sms/provider",
    operation_id = "setSmsProvider",
    tag = "sms",
    request_body = SmsProviderRequest,
    responses(
        (status = 200, description = "Set; its status as `GET` answers it", body = SmsProviderStatus),
        (status = 400, description = "Missing or invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
    )
)]
pub async fn set_provider(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<SmsProviderRequest>,
) -> Result<web::Json<SmsProviderStatus>, ApiError> {
    put_sms_provider(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// Text one contact (by `contact_id`, or by a number of a contact) that consented; sent by
/// the worker through the project's provider, once per `idempotency_key`.
#[utoipa::path(
    post,
    path = "/api/v1/sms/send",
    operation_id = "sendSms",
    tag = "sms",
    request_body = SendSmsRequest,
    responses(
        (status = 201, description = "Written and queued (`status: queued`); `GET /sms/log` follows it", body = SmsMessage),
        (status = 200, description = "The text of this `idempotency_key`, written before: nothing more is sent", body = SmsMessage),
        (status = 400, description = "Missing or invalid field (named in `details.field`): neither or both of `contact_id` and `to`, or a number that is not valid", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`contact_id` is not a contact of this project (`CONTACT_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The `idempotency_key` was used for another text (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
        (status = 422, description = "No SMS provider (`SMS_PROVIDER_NOT_CONFIGURED`), or the number has not consented (`SMS_NO_CONSENT`)", body = MailError),
    )
)]
pub async fn send(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<SendSmsRequest>,
) -> Result<HttpResponse, ApiError> {
    let sent = send_sms(&state, caller.owner_id, &body).await?;
    Ok(if sent.replayed {
        HttpResponse::Ok().json(sent.message)
    } else {
        HttpResponse::Created().json(sent.message)
    })
}

/// Text the site's subscribers whose number consented (each once); a contact in its quiet
/// hours gets it when they end. An agent's campaign waits for approval like a campaign launch.
#[utoipa::path(
    post,
    path = "/api/v1/sms/campaigns",
    operation_id = "sendSmsCampaign",
    tag = "sms",
    params(IdempotencyHeader),
    request_body = SendSmsCampaign,
    responses(
        (status = 201, description = "Written: its texts are queued (or the replayed answer)", body = SmsCampaign,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 202, description = "The campaign waits for a person's approval under the project's approval policy: nothing was written or sent", body = ApprovalRequired),
        (status = 400, description = "Missing or invalid field (named in `details.field`), or bad Idempotency-Key", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
        (status = 422, description = "No SMS provider (`SMS_PROVIDER_NOT_CONFIGURED`)", body = MailError),
    )
)]
pub async fn campaign(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<SendSmsCampaign>,
) -> Result<Answer, ApiError> {
    send_sms_campaign_gated(&state, state.gates.view(synced), &caller, &key, &body).await
}

/// The project's texts, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/sms/log",
    operation_id = "listSmsLog",
    tag = "sms",
    params(SmsLogFilter, PageParams),
    responses(
        (status = 200, description = "A page of texts", body = Page<SmsMessage>),
        (status = 400, description = "Invalid filter, limit or cursor", body = MailError),
    )
)]
pub async fn log(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<SmsLogFilter>,
) -> Result<web::Json<Page<SmsMessage>>, ApiError> {
    list_sms_log(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// The texts the project's number received, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/sms/inbound",
    operation_id = "listSmsInbound",
    tag = "sms",
    params(PageParams),
    responses(
        (status = 200, description = "A page of received texts", body = Page<SmsInboundMessage>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn inbound(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<SmsInboundMessage>>, ApiError> {
    list_sms_inbound(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Set a contact's SMS consent, number and time zone.
#[utoipa::path(
    put,
    path = "/api/v1/sms/contacts/{id}/consent",
    operation_id = "setContactSmsConsent",
    tag = "sms",
    params(("id" = Uuid, Path, description = "The contact's id")),
    request_body = SmsConsentRequest,
    responses(
        (status = 200, description = "The contact's consent", body = ContactSmsConsent),
        (status = 400, description = "Missing or invalid field (named in `details.field`), or `id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a contact of this project (`CONTACT_NOT_FOUND`)", body = MailError),
        (status = 422, description = "The contact has no number yet and none was given", body = MailError),
    )
)]
pub async fn consent(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<SmsConsentRequest>,
) -> Result<web::Json<ContactSmsConsent>, ApiError> {
    set_contact_sms_consent(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// A body's encoding, segments (counted as carriers count them) and price per the
/// deployment's table.
#[utoipa::path(
    post,
    path = "/api/v1/sms/cost-preview",
    operation_id = "previewSmsCost",
    tag = "sms",
    request_body = SmsCostRequest,
    responses(
        (status = 200, description = "The count and the price", body = SmsCostPreview),
        (status = 400, description = "Missing or invalid field (named in `details.field`)", body = MailError),
    )
)]
pub async fn cost_preview(
    _caller: Caller,
    state: web::Data<AppState>,
    body: http_kit::Json<SmsCostRequest>,
) -> web::Json<SmsCostPreview> {
    web::Json(preview_sms_cost(&state, &body))
}
