//! The use cases of the project's team: its members and invitations.
//!
//! The project's team: `GET /api/v1/team` lists its members and invitations,
//! `POST /api/v1/team` invites someone (admin scope: an invitation can grant admin).
//!
//! An invitation is a member of status `invited` with a role (`admin`, `editor` or `viewer`:
//! what an admin, write or read key may do) and a token, shown once in the answer and stored
//! only as its SHA-256, valid 7 days. The invitation is not mailed: the inviter hands over the
//! token, or the join link the dashboard shows (`/dashboard/join?token=…`), where the invited
//! person sets a password: that makes their sign-in (one project per sign-in) and the member
//! `active`, once.

use auth::Caller;
use chrono::{DateTime, Duration, Utc};
use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::notifications::{self, kind};
use crate::db::team::{self, Member, NewMember};
use crate::domain::error_code::MailErrorCode;
use crate::ops::input::normalize_email;

/// How long an invitation's token is valid.
const INVITATION_DAYS: i64 = 7;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything, key and team management included (an admin key's rights).
    Admin,
    /// Reads and changes the project's data (a write key's rights).
    #[default]
    Editor,
    /// Reads only (a read key's rights).
    Viewer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Editor => "editor",
            Role::Viewer => "viewer",
        }
    }

    /// Viewer < editor < admin: each holds the rights of those below it.
    pub fn rank(self) -> u8 {
        match self {
            Role::Viewer => 0,
            Role::Editor => 1,
            Role::Admin => 2,
        }
    }
}

/// A member of the project's team, or an invitation.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamMember {
    pub id: Uuid,
    pub email: String,
    /// `admin`, `editor` or `viewer`.
    pub role: String,
    /// `invited` (not accepted yet) or `active`.
    pub status: String,
    pub invited_at: DateTime<Utc>,
    /// When the invitation's token stops working; null once accepted.
    pub expires_at: Option<DateTime<Utc>>,
    pub accepted_at: Option<DateTime<Utc>>,
}

impl From<Member> for TeamMember {
    fn from(m: Member) -> Self {
        Self {
            id: m.id,
            email: m.email,
            role: m.role,
            status: m.status,
            invited_at: m.invited_at,
            expires_at: m.expires_at,
            accepted_at: m.accepted_at,
        }
    }
}

/// A page of the project's team, in invitation order (`GET /team`, `list_team_members`).
pub async fn list_team_members(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<TeamMember>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = team::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows: Vec<TeamMember> = rows.into_iter().map(TeamMember::from).collect();
    Ok(Page::from_rows(rows, limit, |m| m.id))
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct InviteTeamMember {
    /// Required; stored trimmed and lowercased. One member (or invitation) per address.
    #[schema(format = Email)]
    pub email: String,
    /// Default `editor`.
    pub role: Option<Role>,
}

impl Validate for InviteTeamMember {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)
    }
}

/// A new invitation: its token is in this answer only.
#[derive(Debug, Serialize, ToSchema)]
pub struct Invitation {
    #[serde(flatten)]
    pub member: TeamMember,
    /// The invitation token (`inv_…`), shown once; stored only as its SHA-256.
    pub invitation_token: String,
}

/// A token of 244 random bits (two v4 UUIDs) and its SHA-256.
fn invitation_token() -> (String, Vec<u8>) {
    let token = format!("inv_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
    let hash = store::sha256(token.as_bytes()).to_vec();
    (token, hash)
}

/// Invites `email` to the project (`POST /team`, `invite_team_member`): 409
/// `TEAM_MEMBER_EXISTS` when the project has a member or an invitation of that address.
pub async fn invite_team_member(
    state: &AppState,
    caller: &Caller,
    req: &InviteTeamMember,
) -> Result<Invitation, ApiError> {
    let role = req.role.unwrap_or_default();
    let (token, hash) = invitation_token();
    let mut conn = store::conn(&state.pool).await?;
    let project_id = caller.owner_id;
    let member = conn
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            let Some(member) = team::invite(
                conn,
                NewMember {
                    id: Uuid::now_v7(),
                    project_id,
                    email: &req.email,
                    role: role.as_str(),
                    invitation_hash: &hash,
                    invited_by_key_id: caller.key_id,
                    expires_at: Utc::now() + Duration::days(INVITATION_DAYS),
                },
            )
            .await?
            else {
                return Ok(None);
            };
            notifications::add(
                conn,
                project_id,
                kind::TEAM_MEMBER_INVITED,
                &format!("{} was invited as {}", member.email, member.role),
                serde_json::json!({"member_id": member.id, "email": member.email,
                                   "role": member.role}),
            )
            .await?;
            Ok(Some(member))
        })
        .await?
        .ok_or_else(|| {
            ApiError::conflict(format!("{} is a member or invited already", req.email))
                .with_code(MailErrorCode::TeamMemberExists)
        })?;
    Ok(Invitation {
        member: TeamMember::from(member),
        invitation_token: token,
    })
}

/// The shortest password a person may set when they join.
pub const MIN_PASSWORD_CHARS: usize = 12;

/// The pending, unexpired invitation of `token`: the member it would make.
pub async fn invitation_of(state: &AppState, token: &str) -> Result<TeamMember, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let hash = store::sha256(token.as_bytes());
    team::find_invitation(&mut conn, &hash)
        .await?
        .filter(|m| m.expires_at.is_some_and(|at| at > Utc::now()))
        .map(TeamMember::from)
        .ok_or_else(invitation_not_found)
}

fn invitation_not_found() -> ApiError {
    ApiError::not_found(
        "this invitation does not exist, was used already or has expired: ask for a new one",
    )
}

/// Accepts the invitation of `token` with the password the person chose: their sign-in
/// account is made (its project the invitation's) and the member becomes `active`, in one
/// transaction, once. A used, expired or unknown token is 404; an address that has a sign-in
/// already (of any project) is 409 `TEAM_MEMBER_EXISTS`.
pub async fn accept_invitation(
    state: &AppState,
    token: &str,
    password: &str,
) -> Result<TeamMember, ApiError> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(ApiError::invalid_field(
            "password",
            &format!("at least {MIN_PASSWORD_CHARS} characters"),
        ));
    }
    let hash = store::sha256(token.as_bytes());
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let member = team::lock_invitation(conn, &hash)
            .await?
            .filter(|m| m.member.expires_at.is_some_and(|at| at > Utc::now()))
            .ok_or_else(invitation_not_found)?;
        if oauth::db::find_account_by_email(conn, &member.member.email)
            .await?
            .is_some()
        {
            return Err(ApiError::conflict(format!(
                "{} has a sign-in already (a sign-in belongs to one project)",
                member.member.email
            ))
            .with_code(MailErrorCode::TeamMemberExists));
        }
        oauth::db::create_account(conn, &member.member.email, password, member.project_id).await?;
        let joined = team::accept(conn, member.member.id).await?;
        notifications::add(
            conn,
            member.project_id,
            kind::TEAM_MEMBER_JOINED,
            &format!("{} joined as {}", joined.email, joined.role),
            serde_json::json!({"member_id": joined.id, "email": joined.email,
                               "role": joined.role}),
        )
        .await?;
        Ok(TeamMember::from(joined))
    })
    .await
}
