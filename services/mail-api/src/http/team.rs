//! The project's team: `GET /api/v1/team` lists its members and invitations,
//! `POST /api/v1/team` invites someone (admin scope: an invitation can grant admin).
//!
//! An invitation is a member of status `invited` with a role (`admin`, `editor` or `viewer`:
//! what an admin, write or read key may do) and a token, shown once in the answer and stored
//! only as its SHA-256, valid 7 days. The invitation is not mailed: the inviter hands the token
//! over. People sign in on the first-party pages that come with OAuth; accepting an invitation
//! (status `active`) comes with them.

use actix_web::{HttpResponse, web};
use auth::{AdminAccess, Caller};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::team::{
    Invitation, InviteTeamMember, TeamMember, invite_team_member, list_team_members,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(invite)];

/// The project's team members and invitations.
#[utoipa::path(
    get,
    path = "/api/v1/team",
    operation_id = "listTeamMembers",
    tag = "account",
    params(PageParams),
    responses(
        (status = 200, description = "A page of members, in invitation order", body = Page<TeamMember>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<TeamMember>>, ApiError> {
    list_team_members(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Invite someone to the project's team (admin scope: an invitation can grant admin).
#[utoipa::path(
    post,
    path = "/api/v1/team",
    operation_id = "inviteTeamMember",
    tag = "account",
    request_body = InviteTeamMember,
    responses(
        (status = 201, description = "Invited; `invitation_token` is shown this once (valid 7 days; the invitation is not mailed)", body = Invitation),
        (status = 400, description = "Missing or invalid field (named in `details.field`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
        (status = 409, description = "`TEAM_MEMBER_EXISTS`: the project has a member or an invitation of this address", body = MailError),
    )
)]
pub async fn invite(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<InviteTeamMember>,
) -> Result<HttpResponse, ApiError> {
    let invitation = invite_team_member(&state, &caller, &body).await?;
    Ok(HttpResponse::Created().json(invitation))
}
