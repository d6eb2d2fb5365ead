//! The caller's own credentials (BYOK): listing, storing (sealed) and deleting them.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams};
use secrets::Kek;
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::byok::{self, NewCredential};
use crate::db::owner::Owner;
use crate::domain;

/// A stored credential. It carries a hint of the key, never the key.
#[derive(Debug, Serialize, ToSchema)]
pub struct ByokCredential {
    pub id: Uuid,
    /// The service the key is for, e.g. `openai`.
    pub service: String,
    pub label: String,
    /// `…` and the key's last characters (a quarter of the key at most, never more than 4).
    pub key_hint: String,
    pub created_at: DateTime<Utc>,
    /// When the service last called with this key (null: never).
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<byok::Credential> for ByokCredential {
    fn from(c: byok::Credential) -> Self {
        Self {
            id: c.id,
            service: c.service,
            label: c.label,
            key_hint: c.key_hint,
            created_at: c.created_at,
            last_used_at: c.last_used_at,
        }
    }
}

/// The body of `POST /byok`. Unknown fields are refused.
#[derive(Deserialize, Serialize, ToSchema)]
pub struct CreateByok {
    /// What the key is for: a lowercase name (letters, digits, `.`, `_`, `-`; 1..=50).
    /// `openai` is the service of the deployment's OpenAI-compatible endpoint: embeddings and
    /// model calls made for the caller go through this key when it is stored. One credential
    /// per service.
    #[schema(min_length = 1, max_length = 50, pattern = r"^[a-z0-9][a-z0-9._-]*$")]
    pub service: String,
    /// 1..=100 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub label: String,
    /// The key, 8..=4096 printable ASCII characters without spaces. Stored encrypted; never
    /// shown again.
    #[schema(min_length = 8, max_length = 4096, pattern = r"^[!-~]+$")]
    pub key: String,
}

impl std::fmt::Debug for CreateByok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateByok")
            .field("service", &self.service)
            .field("label", &self.label)
            .field("key", &"..")
            .finish()
    }
}

impl http_kit::Validate for CreateByok {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.label);
        Ok(())
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ByokDeleted {
    pub success: bool,
    pub id: Uuid,
}

/// List the caller's stored credentials (hints only).
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    page: &PageParams,
) -> Result<Page<ByokCredential>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(pool).await?;
    let rows = byok::list(&mut conn, Owner::of(caller), after, i64::from(limit) + 1).await?;
    let rows: Vec<ByokCredential> = rows.into_iter().map(ByokCredential::from).collect();
    Ok(Page::from_rows(rows, limit, |c| c.id))
}

/// Delete a stored credential (its key is gone for good).
pub async fn delete(pool: &Pool, caller: &Caller, id: Uuid) -> Result<ByokDeleted, ApiError> {
    let mut conn = store::conn(pool).await?;
    if !byok::delete(&mut conn, Owner::of(caller), id).await? {
        return Err(ApiError::not_found("no such credential"));
    }
    Ok(ByokDeleted { success: true, id })
}

/// Stores a credential of the caller, sealed (409 when one for the service is stored).
pub async fn create(
    pool: &Pool,
    kek: &Kek,
    caller: &Caller,
    body: &CreateByok,
) -> Result<ByokCredential, ApiError> {
    let id = Uuid::now_v7();
    let sealed = domain::byok::seal(kek, id, &body.key);
    let hint = domain::byok::key_hint(&body.key);
    let mut conn = store::conn(pool).await?;
    let stored = byok::insert(
        &mut conn,
        Owner::of(caller),
        NewCredential {
            id,
            service: &body.service,
            label: &body.label,
            sealed_key: &sealed,
            key_hint: &hint,
        },
    )
    .await?
    .ok_or_else(|| {
        ApiError::conflict(format!(
            "a credential for service {:?} is stored: delete it first (DELETE /byok/{{id}})",
            body.service
        ))
    })?;
    Ok(ByokCredential::from(stored))
}
