//! The identity kernel: reading it (with its confidence) and updating it by JSON merge
//! patch within its token budget.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::ApiError;
use serde::Serialize;
use serde_json::Value;
use store::Pool;
use utoipa::ToSchema;

use crate::db::kernels::{self, NewKernel, UpdateError};
use crate::db::owner::Owner;
use crate::db::owner_cache;
use crate::domain::kernel::{self, Confidence, TOKEN_BUDGET};
use crate::domain::merge_patch;
use crate::state::AppState;

/// The kernel and what is injected from it.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityKernel {
    /// The kernel as stored (free-form; documented keys identity, products, constraints,
    /// model_preferences).
    #[schema(value_type = Object)]
    pub kernel: Value,
    /// Compact Markdown for prompt injection; null for an empty kernel.
    pub injection_block: Option<String>,
    /// o200k_base tokens of `injection_block`.
    pub token_count: i32,
    pub confidence: Confidence,
    pub updated_at: DateTime<Utc>,
    /// Send as `If-Match` to update only this version (also the `ETag`).
    pub version: i32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityUpdated {
    pub success: bool,
    pub token_count: i32,
    pub version: i32,
    pub updated_at: DateTime<Utc>,
}

/// Why a patched kernel is refused (422).
enum Refusal {
    WrongType(String),
    OverBudget(usize),
}

/// The caller's identity kernel (through this worker's cache), with its confidence.
pub async fn get(
    state: &AppState,
    caller: &Caller,
    synced: Option<auth::Synced>,
) -> Result<IdentityKernel, ApiError> {
    let owner = Owner::of(caller);
    let stored = state
        .kernels
        .find(synced, &owner_cache::key(owner), "", async || {
            let mut conn = store::conn(&state.pool).await?;
            Ok::<_, ApiError>(kernels::find(&mut conn, owner).await?)
        })
        .await?
        .ok_or_else(|| ApiError::not_found("no identity kernel yet: PUT one first"))?;
    let members = stored.kernel.as_object().cloned().unwrap_or_default();
    let confidence = kernel::confidence(
        &members,
        usize::try_from(stored.token_count).unwrap_or(0),
        stored.updated_at,
        Utc::now(),
    );
    Ok(IdentityKernel {
        kernel: stored.kernel,
        injection_block: stored.injection_block,
        token_count: stored.token_count,
        confidence,
        updated_at: stored.updated_at,
        version: stored.version,
    })
}

/// Applies a JSON merge patch to the caller's identity kernel (409 when `expected` is not
/// the current version; 422 for a wrong type or a block over the token budget).
pub async fn put(
    pool: &Pool,
    caller: &Caller,
    expected: Option<i32>,
    patch: Value,
) -> Result<IdentityUpdated, ApiError> {
    if !patch.is_object() {
        return Err(ApiError::invalid_field(
            "body",
            "must be a JSON object (a merge patch)",
        ));
    }
    let mut conn = store::conn(pool).await?;
    let stored = kernels::update(&mut conn, Owner::of(caller), expected, |members| {
        let mut merged = Value::Object(members);
        merge_patch::apply(&mut merged, &patch);
        let Value::Object(merged) = merged else {
            unreachable!("an object patched by an object stays an object")
        };
        kernel::check_types(&merged).map_err(Refusal::WrongType)?;
        let rendered = kernel::render(&merged);
        if rendered.token_count > TOKEN_BUDGET {
            return Err(Refusal::OverBudget(rendered.token_count));
        }
        Ok(NewKernel {
            kernel: merged,
            injection_block: rendered.block,
            token_count: i32::try_from(rendered.token_count).unwrap_or(i32::MAX),
        })
    })
    .await
    .map_err(|err| match err {
        UpdateError::Stale { expected, current } => ApiError::conflict(format!(
            "If-Match names version {expected}, but the kernel is at version {current}"
        )),
        UpdateError::Rejected(Refusal::WrongType(why)) => ApiError::unprocessable(why),
        UpdateError::Rejected(Refusal::OverBudget(tokens)) => ApiError::unprocessable(format!(
            "the injection block would be {tokens} tokens, over the budget of {TOKEN_BUDGET}"
        )),
        UpdateError::Database(e) => ApiError::internal_error(&e),
    })?;
    Ok(IdentityUpdated {
        success: true,
        token_count: stored.token_count,
        version: stored.version,
        updated_at: stored.updated_at,
    })
}
