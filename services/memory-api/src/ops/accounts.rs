//! The account a credential is linked to: its owner, environment, scopes, rate limits and
//! active workspace.

use auth::{Caller, Grade};
use chrono::{DateTime, Utc};
use http_kit::ApiError;
use rate_limit::policy::{Tier, memory_quotas};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::{credentials, users, workspaces};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct LinkedAccount {
    pub id: Uuid,
    pub email: String,
    /// `free`, `pro` or `team`.
    pub tier: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CredentialContext {
    pub id: Uuid,
    pub name: String,
    /// `api_key` (`mem_live_…`, `mem_test_…`) or `oauth` (`memo_…`).
    pub kind: String,
    /// `first_party` or `connector` (connector tokens read and propose only, never approve).
    pub origin: String,
    /// Of `read`, `write`, `propose`.
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// Requests this credential may make; null: unlimited.
#[derive(Debug, Serialize, ToSchema)]
pub struct Limits {
    pub per_minute: Option<u64>,
    pub per_day: Option<u64>,
}

/// The account a credential is linked to, and the context an agent needs there.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountContext {
    pub account: LinkedAccount,
    /// `live` or `test`: the environment whose memory this credential reads and writes (the
    /// other one's is invisible to it).
    pub environment: String,
    pub credential: CredentialContext,
    pub limits: Limits,
    /// The credential's active workspace (see `GET /scope`).
    pub active_workspace_id: Option<Uuid>,
}

/// The linked account's context.
pub async fn get(state: &AppState, caller: &Caller) -> Result<AccountContext, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let gone = || ApiError::internal("the authenticated credential has no row");
    let user = users::find(&mut conn, caller.owner_id)
        .await?
        .ok_or_else(gone)?;
    let key = credentials::find_key(&mut conn, caller.key_id)
        .await?
        .ok_or_else(gone)?;
    let active = workspaces::active(&mut conn, caller.key_id).await?;
    let tier = match caller.grade {
        Grade::Tier(tier) => tier,
        Grade::Plan(_) => Tier::Free,
    };
    let [minute, day] =
        memory_quotas(tier).map(|q| service_kit::scale_quota(q, state.rate_limit_scale).limit);
    Ok(AccountContext {
        account: LinkedAccount {
            id: user.id,
            email: user.email,
            tier: user.tier,
            created_at: user.created_at,
        },
        environment: caller.environment.as_str().to_owned(),
        credential: CredentialContext {
            id: key.id,
            name: key.name,
            kind: key.kind,
            origin: key.origin,
            scopes: key.scopes,
            created_at: key.created_at,
            expires_at: key.expires_at,
        },
        limits: Limits {
            per_minute: minute,
            per_day: day,
        },
        active_workspace_id: active,
    })
}
