//! Product states: each product's current state, read and written by JSON merge patch.

use std::collections::BTreeSet;

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::ApiError;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::embeddings::{self, PRODUCT_STATES};
use crate::db::owner::Owner;
use crate::db::product_states::{self, ChangeError};
use crate::domain::search::vector_literal;
use crate::domain::{merge_patch, state_text};
use crate::embeddings::embed_passage;
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct ProductState {
    pub product_name: String,
    /// The state's `status` member, when it is a string.
    pub status: Option<String>,
    /// The current state; null before the first write.
    #[schema(value_type = Option<Object>)]
    pub state: Option<Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StateUpdated {
    pub success: bool,
    pub product_name: String,
    /// The id of the state version now current.
    pub id: Uuid,
    pub version: i32,
    pub updated_at: DateTime<Utc>,
}

/// Embeds a new state version for semantic search, outside the write's transaction and without
/// holding a pooled connection while the provider works. When the provider fails the version
/// stays unembedded and the background pass embeds it later.
async fn embed_version(
    state: &AppState,
    owner: Owner<'_>,
    product_name: &str,
    version: &product_states::StateVersion,
) -> Result<(), ApiError> {
    let Value::Object(members) = &version.state else {
        return Ok(());
    };
    let text = state_text::render(product_name, members);
    if let Some(vector) = embed_passage(state, owner, &text).await {
        let mut conn = store::conn(&state.pool).await?;
        let literal = vector_literal(&vector);
        embeddings::set_embedding(&mut conn, &PRODUCT_STATES, owner, version.id, &literal).await?;
    }
    Ok(())
}

/// One line for the feed: the new status if it changed, and which keys changed.
fn summary(product: &str, before: &Map<String, Value>, after: &Map<String, Value>) -> String {
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let changed: Vec<&str> = keys
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(String::as_str)
        .collect();
    let status = after
        .get("status")
        .and_then(Value::as_str)
        .filter(|_| before.get("status") != after.get("status"));
    match status {
        Some(status) => format!(
            "{product}: status is now {status}; changed {}",
            changed.join(", ")
        ),
        None => format!("{product}: changed {}", changed.join(", ")),
    }
}

/// The current state of an owned product.
pub async fn get(
    state: &AppState,
    caller: &Caller,
    name: String,
) -> Result<ProductState, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let current = product_states::current(&mut conn, Owner::of(caller), &name)
        .await?
        .ok_or_else(|| ApiError::not_found("no such product"))?;
    let state = current.map(|v| v.state);
    Ok(ProductState {
        status: state
            .as_ref()
            .and_then(|s| s.get("status"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        product_name: name,
        state,
    })
}

/// Merge-patch the state of an owned product.
pub async fn post(
    state: &AppState,
    caller: &Caller,
    name: String,
    patch: Value,
) -> Result<StateUpdated, ApiError> {
    if !patch.is_object() {
        return Err(ApiError::invalid_field(
            "body",
            "must be a JSON object (a merge patch)",
        ));
    }
    if patch
        .get("status")
        .is_some_and(|s| !s.is_string() && !s.is_null())
    {
        return Err(ApiError::invalid_field("status", "must be a string"));
    }
    let mut conn = store::conn(&state.pool).await?;
    let (version, created) = product_states::change(
        &mut conn,
        Owner::of(caller),
        &name,
        |before| {
            let mut merged = Value::Object(before.clone());
            merge_patch::apply(&mut merged, &patch);
            match merged {
                Value::Object(after) => Ok::<_, ApiError>(after),
                _ => unreachable!("an object patched by an object stays an object"),
            }
        },
        |before, after| summary(&name, before, after),
    )
    .await
    .map_err(|err| match err {
        ChangeError::NotFound => ApiError::not_found("no such product"),
        ChangeError::Rejected(err) => err,
        ChangeError::Database(err) => ApiError::internal_error(&err),
    })?;
    drop(conn);
    if created {
        embed_version(state, Owner::of(caller), &name, &version).await?;
    }
    Ok(StateUpdated {
        success: true,
        product_name: name,
        id: version.id,
        version: version.version,
        updated_at: version.created_at,
    })
}
