//! Other email platforms: `POST`/`GET /api/v1/platforms/connections` and
//! `DELETE /api/v1/platforms/connections/{id}` ([`crate::ops::platforms`]).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::platforms::{
    ConnectImportPlatform, ImportPlatformConnection, connect_platform, disconnect_platform,
    list_connected_platforms,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(connect), route!(disconnect)];

/// The project's connected platform accounts, oldest first (never their credentials).
#[utoipa::path(
    get,
    path = "/api/v1/platforms/connections",
    operation_id = "listPlatformConnections",
    tag = "imports",
    params(PageParams),
    responses(
        (status = 200, description = "A page of connections", body = Page<ImportPlatformConnection>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<ImportPlatformConnection>>, ApiError> {
    list_connected_platforms(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Connect an account of another email platform (Mailchimp, Brevo, Kit, MailerLite) to
/// migrate from: its API key is checked against the platform, then stored sealed.
#[utoipa::path(
    post,
    path = "/api/v1/platforms/connections",
    operation_id = "connectPlatform",
    tag = "imports",
    request_body = ConnectImportPlatform,
    responses(
        (status = 201, description = "Connected", body = ImportPlatformConnection),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 422, description = "The platform refused the credential, or could not be reached (`PLATFORM_REFUSED`, the platform in the message and in `details.platform`)", body = MailError),
    )
)]
pub async fn connect(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ConnectImportPlatform>,
) -> Result<HttpResponse, ApiError> {
    let connection = connect_platform(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(connection))
}

/// Disconnect a platform account: its sealed credential is deleted; what was imported stays.
#[utoipa::path(
    delete,
    path = "/api/v1/platforms/connections/{id}",
    operation_id = "disconnectPlatform",
    tag = "imports",
    params(("id" = Uuid, Path, description = "The connection's id")),
    responses(
        (status = 204, description = "Disconnected"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a connection of this project (`PLATFORM_CONNECTION_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn disconnect(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    disconnect_platform(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}
