//! Decisions: `POST /memory/decisions`, `DELETE /memory/decisions/{id}`,
//! `GET /memory/decisions/search`.

use std::time::Instant;

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Query, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::state::AppState;
use crate::db::decisions::{self, NewDecision};
use crate::db::embeddings;
use crate::db::owner::Owner;
use crate::domain::{search, tags};
use crate::embeddings::{embed_decision, embed_query};
use crate::http::scope;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/memory/decisions").route(web::post().to(create)))
        .service(web::resource("/memory/decisions/search").route(web::get().to(search)))
        .service(web::resource("/memory/decisions/{id}").route(web::delete().to(delete)));
}

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

/// Record a decision.
#[utoipa::path(
    post,
    path = "/api/v1/memory/decisions",
    operation_id = "createDecision",
    tag = "decisions",
    request_body = CreateDecision,
    responses(
        (status = 201, description = "Recorded in the credential's active workspace (account-wide without one; see `GET /scope`); tags derived by the service", body = DecisionCreated),
        (status = 400, description = "A field is missing or over its limit", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "product_name or an affects_products entry is not an owned product", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateDecision>,
) -> Result<HttpResponse, ApiError> {
    // Embedded before a database connection is taken: a remote provider may be slow, and a
    // pooled connection must not wait on it.
    let owner = Owner::of(&caller);
    let embedding = embed_decision(&state, owner, &body.decision, body.reasoning.as_deref())
        .await
        .map(|v| search::vector_literal(&v));
    let mut named: Vec<&str> = vec![body.product_name.as_str()];
    named.extend(body.affects_products.iter().map(String::as_str));
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, &caller, None).await?;
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
    Ok(HttpResponse::Created().json(DecisionCreated {
        success: true,
        id: recorded.id,
        decision: recorded.decision,
        tags: recorded.tags,
        affects_products: recorded.affects_products,
        decided_at: recorded.decided_at,
        embedded: embedding.is_some(),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionDeleted {
    pub success: bool,
    pub id: Uuid,
}

/// Delete an owned decision.
#[utoipa::path(
    delete,
    path = "/api/v1/memory/decisions/{id}",
    operation_id = "deleteDecision",
    tag = "decisions",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "Decision id")),
    responses(
        (status = 200, description = "Deleted", body = DecisionDeleted),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such decision of the caller in the active workspace or account-wide (see `GET /scope`)", body = MemoryError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<DecisionDeleted>, ApiError> {
    let id = id.into_inner();
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, &caller, None).await?;
    if !decisions::delete(&mut conn, view, id).await? {
        return Err(ApiError::not_found("no such decision"));
    }
    Ok(web::Json(DecisionDeleted { success: true, id }))
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

/// Search the caller's decisions (the best `limit` matches; no threshold), those of the
/// active workspace and the account-wide ones (see `GET /scope`).
#[utoipa::path(
    get,
    path = "/api/v1/memory/decisions/search",
    operation_id = "searchDecisions",
    tag = "decisions",
    params(SearchParams),
    responses(
        (status = 200, description = "Best matches first", body = DecisionSearch),
        (status = 400, description = "q missing or too long, or limit outside 1..=50", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn search(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: Query<SearchParams>,
) -> Result<web::Json<DecisionSearch>, ApiError> {
    let started = Instant::now();
    let query = params.q.as_str();
    let limit = params.limit.unwrap_or(SEARCH_LIMIT_DEFAULT);
    let owner = Owner::of(&caller);
    let query_vector = embed_query(&state, owner, query).await;
    let product = params.product.as_deref();
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, &caller, None).await?;
    // Each ranking brings more candidates than asked, so fusion can reorder them.
    let candidates = i64::from(limit.max(10) * 2);
    let keyword = embeddings::search_keyword(&mut conn, view, query, product, candidates).await?;
    let (found, mode) = match query_vector {
        Some(vector) => {
            let literal = search::vector_literal(&vector);
            let semantic =
                embeddings::search_semantic(&mut conn, view, &literal, product, candidates).await?;
            (fuse_decisions(semantic, keyword), "semantic")
        }
        None => (keyword, "keyword"),
    };
    let decisions: Vec<Decision> = found
        .into_iter()
        .take(limit as usize)
        .map(Decision::from)
        .collect();
    Ok(web::Json(DecisionSearch {
        count: decisions.len(),
        decisions,
        search_mode: mode.to_owned(),
        query: query.to_owned(),
        latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }))
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
