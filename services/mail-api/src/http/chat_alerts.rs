//! Chat alerts on bounces and complaints: `GET`/`PUT`/`DELETE /api/v1/chat-alerts`, the
//! project's Slack-compatible incoming-webhook URL (stored sealed; only its host is shown).
//! The messages are batched: at most one a minute ([`crate::outbound::chat`]).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::chat_alerts::{
    ChatAlerts, PutChatAlerts, delete_chat_alerts, get_chat_alerts, put_chat_alerts,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(get), route!(put), route!(delete)];

/// The project's chat alerts.
#[utoipa::path(
    get,
    path = "/api/v1/chat-alerts",
    operation_id = "getChatAlerts",
    tag = "webhooks",
    responses((status = 200, description = "Whether and where chat alerts go", body = ChatAlerts))
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<ChatAlerts>, ApiError> {
    get_chat_alerts(&state, caller.owner_id)
        .await
        .map(web::Json)
}

/// Send bounce and complaint alerts to a chat (a Slack-compatible incoming webhook), at most
/// one message a minute.
#[utoipa::path(
    put,
    path = "/api/v1/chat-alerts",
    operation_id = "putChatAlerts",
    tag = "webhooks",
    request_body = PutChatAlerts,
    responses(
        (status = 200, description = "Configured: events from now on are reported", body = ChatAlerts),
        (status = 400, description = "Missing or invalid URL, a URL that is not public, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn put(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<PutChatAlerts>,
) -> Result<web::Json<ChatAlerts>, ApiError> {
    put_chat_alerts(&state, caller.owner_id, &body.url)
        .await
        .map(web::Json)
}

/// Stop the chat alerts.
#[utoipa::path(
    delete,
    path = "/api/v1/chat-alerts",
    operation_id = "deleteChatAlerts",
    tag = "webhooks",
    responses(
        (status = 204, description = "Stopped (or there were none)"),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    delete_chat_alerts(&state, caller.owner_id).await?;
    Ok(HttpResponse::NoContent().finish())
}
