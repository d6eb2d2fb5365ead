//! `GET /accounts`: the account a credential is linked to, and what it may do there.

use actix_web::web;
use auth::ReadAccess;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};

use crate::ops::accounts::{self as ops, AccountContext};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(get)];

/// The linked account's context.
#[utoipa::path(
    get,
    path = "/api/v1/accounts",
    operation_id = "getLinkedAccount",
    tag = "accounts",
    description = "The account the credential making the request is linked to (a connector or \
        an agent learns whose memory it holds), the environment it acts on, what the credential \
        may do (kind, origin, scopes, expiry), its rate limits and its active workspace. Only \
        the caller's own account: there is nothing to page or filter.",
    responses(
        (status = 200, description = "The account context", body = AccountContext),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
) -> Result<web::Json<AccountContext>, ApiError> {
    ops::get(&state, &caller).await.map(web::Json)
}
