//! The decision index: recording a decision (tagged and embedded), deleting one, and the
//! hybrid search over decisions.

use std::time::Instant;

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::db::decisions::{self, NewDecision};
use crate::db::embeddings;
use crate::db::owner::Owner;
use crate::domain::{search, tags};
use crate::embeddings::{PreviousVector, embed_decision, embed_previous_query, embed_query};
use crate::ops::scope;
use crate::state::AppState;

const SEARCH_LIMIT_DEFAULT: u32 = 10;

/// A recorded decision.
#[derive(Debug, Serialize, ToSchema)]
pub struct Decision {
    pub id: Uuid,
    pub decision: String,
    pub reasoning: Option<String>,
    pub tags: Vec<String>,
    pub product_name: Option<String>,
    pub affects_products: Vec<String>,
    pub decided_at: DateTime<Utc>,
}

impl From<decisions::Decision> for Decision {
    fn from(d: decisions::Decision) -> Self {
        Self {
            id: d.id,
            decision: d.decision,
            reasoning: d.reasoning,
            tags: d.tags,
            product_name: Some(d.product_name),
            affects_products: d.affects_products,
            decided_at: d.decided_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateDecision {
    /// 1..=2,000 characters, not blank.
    #[schema(min_length = 1, max_length = 2000, pattern = r"[^\s\x85\uFEFF]")]
    pub decision: String,
    /// An owned product, 1..=100 characters, not blank.
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub product_name: String,
    /// At most 5,000 characters.
    #[schema(max_length = 5000)]
    pub reasoning: Option<String>,
    /// Owned products this decision also affects (each 1..=100 characters, not blank).
    #[serde(default)]
    #[schema(required = false, schema_with = product_names_schema)]
    pub affects_products: Vec<String>,
}

fn product_names_schema() -> utoipa::openapi::schema::Array {
    http_kit::request::text_list(None, 100)
}

impl Validate for CreateDecision {}

#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionCreated {
    pub success: bool,
    pub id: Uuid,
    pub decision: String,
    pub tags: Vec<String>,
    pub affects_products: Vec<String>,
    pub decided_at: DateTime<Utc>,
    /// Whether the embedding was stored in this request (semantic search finds it only then;
    /// a background pass embeds the others).
    pub embedded: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionDeleted {
    pub success: bool,
    pub id: Uuid,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// What to look for: 1..=1,000 characters, not blank (trimmed).
    #[param(min_length = 1, max_length = 1000, pattern = r"[^\s\x85\uFEFF]")]
    pub q: String,
    /// 1..=50 (default 10).
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<u32>,
    /// Only decisions on, or affecting, this product.
    pub product: Option<String>,
}

impl Validate for SearchParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.q);
        Ok(())
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionSearch {
    pub decisions: Vec<Decision>,
    pub count: usize,
    /// `semantic` when an embedding provider answered, else `keyword`.
    pub search_mode: String,
    pub query: String,
    pub latency_ms: u64,
}

fn fuse_decisions(
    semantic: Vec<decisions::Decision>,
    keyword: Vec<decisions::Decision>,
) -> Vec<decisions::Decision> {
    let order = search::fuse(&[
        semantic.iter().map(|d| d.id).collect(),
        keyword.iter().map(|d| d.id).collect(),
    ]);
    let mut by_id: std::collections::HashMap<Uuid, decisions::Decision> = semantic
        .into_iter()
        .chain(keyword)
        .map(|d| (d.id, d))
        .collect();
    order
        .into_iter()
        .filter_map(|id| by_id.remove(&id))
        .collect()
}

/// Delete an owned decision.
pub async fn delete(pool: &Pool, caller: &Caller, id: Uuid) -> Result<DecisionDeleted, ApiError> {
    let mut conn = store::conn(pool).await?;
    let view = scope::view(&mut conn, caller, None).await?;
    if !decisions::delete(&mut conn, view, id).await? {
        return Err(ApiError::not_found("no such decision"));
    }
    Ok(DecisionDeleted { success: true, id })
}

/// Search the caller's decisions (the best `limit` matches; no threshold), those of the
pub async fn search(
    state: &AppState,
    caller: &Caller,
    params: &SearchParams,
) -> Result<DecisionSearch, ApiError> {
    let started = Instant::now();
    let query = params.q.as_str();
    let limit = params.limit.unwrap_or(SEARCH_LIMIT_DEFAULT);
    let owner = Owner::of(caller);
    let (query_vector, previous) = tokio::join!(
        embed_query(state, owner, query),
        embed_previous_query(state, owner, query)
    );
    let product = params.product.as_deref();
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, None).await?;
    // Each ranking brings more candidates than asked, so fusion can reorder them.
    let candidates = i64::from(limit.max(10) * 2);
    let keyword = embeddings::search_keyword(&mut conn, view, query, product, candidates).await?;
    let (found, mode) = match query_vector {
        Some(vector) => {
            let previous = previous.as_ref().map(PreviousVector::query);
            let semantic = embeddings::search_semantic(
                &mut conn, view, &vector, previous, product, candidates,
            )
            .await?;
            (fuse_decisions(semantic, keyword), "semantic")
        }
        None => (keyword, "keyword"),
    };
    let decisions: Vec<Decision> = found
        .into_iter()
        .take(limit as usize)
        .map(Decision::from)
        .collect();
    Ok(DecisionSearch {
        count: decisions.len(),
        decisions,
        search_mode: mode.to_owned(),
        query: query.to_owned(),
        latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// Records a decision of the caller (embedded first, when a provider answers), tagged from its
/// words and the products it names (404 for a product the caller does not have).
pub async fn create(
    state: &AppState,
    caller: &Caller,
    body: &CreateDecision,
) -> Result<DecisionCreated, ApiError> {
    // Embedded before a database connection is taken: a remote provider may be slow, and a
    // pooled connection must not wait on it.
    let owner = Owner::of(caller);
    let embedding = embed_decision(state, owner, &body.decision, body.reasoning.as_deref())
        .await
        .map(|v| search::vector_literal(&v));
    let mut named: Vec<&str> = vec![body.product_name.as_str()];
    named.extend(body.affects_products.iter().map(String::as_str));
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, None).await?;
    let unknown = decisions::unknown_products(&mut conn, owner, &named).await?;
    if let Some(name) = unknown.first() {
        return Err(ApiError::not_found(format!("no product named {name:?}")));
    }
    let mut affects: Vec<String> = Vec::new();
    for name in &body.affects_products {
        if !affects.contains(name) {
            affects.push(name.clone());
        }
    }
    let derived = tags::derive(&body.decision, body.reasoning.as_deref(), &named);
    let recorded = decisions::insert(
        &mut conn,
        view,
        NewDecision {
            decision: &body.decision,
            reasoning: body.reasoning.as_deref(),
            product_name: &body.product_name,
            affects_products: &affects,
            tags: derived,
            embedding: embedding.as_deref(),
        },
    )
    .await?;
    Ok(DecisionCreated {
        success: true,
        id: recorded.id,
        decision: recorded.decision,
        tags: recorded.tags,
        affects_products: recorded.affects_products,
        decided_at: recorded.decided_at,
        embedded: embedding.is_some(),
    })
}
