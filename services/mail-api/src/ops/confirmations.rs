//! The two-call confirmation of destructive tools: the first call is issued a single-use
//! token bound to the key, the tool and its arguments, which expires after
//! [`CONFIRMATION_TTL_MINUTES`]; the second call spends it.

use chrono::{DateTime, Duration, Utc};
use http_kit::ApiError;
use store::Pool;
use uuid::Uuid;

use crate::db::confirmations::{self, NewConfirmation};

/// How long a confirmation token stays valid.
pub const CONFIRMATION_TTL_MINUTES: i64 = 10;

/// A token issued, and when it expires.
#[derive(Debug)]
pub struct Issued {
    pub token: String,
    pub expires_at: DateTime<Utc>,
}

/// Issues the token that confirms the call of `tool` by `key_id` with the arguments hashed
/// `arguments_hash` (only its hash is stored).
pub async fn issue(
    pool: &Pool,
    project_id: Uuid,
    key_id: Uuid,
    tool: &str,
    arguments_hash: &[u8],
) -> Result<Issued, ApiError> {
    let token = format!("cfm_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
    let expires_at: DateTime<Utc> = Utc::now() + Duration::minutes(CONFIRMATION_TTL_MINUTES);
    let mut conn = store::conn(pool).await?;
    confirmations::insert(
        &mut conn,
        NewConfirmation {
            token_hash: &store::sha256(token.as_bytes()),
            project_id,
            key_id,
            tool,
            arguments_hash,
            expires_at,
        },
    )
    .await?;
    Ok(Issued { token, expires_at })
}

/// Spends `token`: `false` when it is unknown, spent already, expired, or was issued to
/// another key, tool or arguments.
pub async fn spend(
    pool: &Pool,
    token: &str,
    key_id: Uuid,
    tool: &str,
    arguments_hash: &[u8],
) -> Result<bool, ApiError> {
    let mut conn = store::conn(pool).await?;
    Ok(confirmations::spend(
        &mut conn,
        &store::sha256(token.as_bytes()),
        key_id,
        tool,
        arguments_hash,
    )
    .await?)
}
