//! The use cases of the project's team: its members and invitations.
//!
//! The project's team: `GET /api/v1/team` lists its members and invitations,
//! `POST /api/v1/team` invites someone (admin scope: an invitation can grant admin).
//!
//! An invitation is a member of status `invited` with a role (`admin`, `editor` or `viewer`:
//! what an admin, write or read key may do) and a token, shown once in the answer and stored
//! only as its SHA-256, valid 7 days. The invitation is not mailed: the inviter hands the token
//! over. People sign in on the first-party pages that come with OAuth; accepting an invitation
//! (status `active`) comes with them.

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

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, ToSchema)]
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
    fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Editor => "editor",
            Role::Viewer => "viewer",
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
