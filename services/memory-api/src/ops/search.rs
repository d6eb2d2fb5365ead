//! Semantic and keyword search over the caller's memory, fused into one ranking.

use std::time::Instant;

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::db::search::{self as db, FoundDecision, FoundState, Query};
use crate::domain::search::vector_literal;
use crate::embeddings::{PreviousVector, embed_previous_query, embed_query};
use crate::ops::decisions::Decision;
use crate::state::AppState;

const LIMIT_DEFAULT: u32 = 10;

const MIN_SIMILARITY_DEFAULT: f32 = 0.5;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemorySearchParams {
    /// What to look for: 1..=1,000 characters, not blank (trimmed).
    #[param(min_length = 1, max_length = 1000, pattern = r"[^\s\x85\uFEFF]")]
    pub q: String,
    /// 1..=20 (default 10): at most this many results, decisions and states together.
    #[param(minimum = 1, maximum = 20)]
    pub limit: Option<u32>,
    /// 0..=1 (default 0.5). In semantic mode, the calibrated similarity a result needs unless
    /// it also matches the query's words (exact names and identifiers are always found).
    /// Ignored in keyword mode.
    #[param(minimum = 0, maximum = 1)]
    pub min_similarity: Option<f32>,
    /// Comma-separated: `decisions`, `product_states` (default both).
    #[param(pattern = "^ *(decisions|product_states) *(, *(decisions|product_states) *)*$")]
    pub include: Option<String>,
}

impl Validate for MemorySearchParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.q);
        Ok(())
    }
}

/// A decision found by `/memory/search`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundDecisionBody {
    #[serde(flatten)]
    pub decision: Decision,
    /// The calibrated similarity to the query, 0..1 (null in keyword mode, and for a decision
    /// not embedded yet).
    pub similarity: Option<f32>,
}

/// The current state of a product, found by `/memory/search`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundProductState {
    /// The id of the state version.
    pub id: Uuid,
    pub product_name: String,
    /// The state's `status` member, when it is a string.
    pub status: Option<String>,
    #[schema(value_type = Object)]
    pub state: Value,
    pub version: i32,
    pub updated_at: DateTime<Utc>,
    /// The calibrated similarity to the query, 0..1 (null in keyword mode).
    pub similarity: Option<f32>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemorySearch {
    pub decisions: Vec<FoundDecisionBody>,
    pub product_states: Vec<FoundProductState>,
    /// How many results are returned.
    pub count: usize,
    /// How many matched before `limit`.
    pub total: i64,
    /// `semantic` when the embedding provider answered, else `keyword`.
    pub search_mode: String,
    pub query: String,
    /// The server's own measure of this search.
    pub latency_ms: u64,
}

struct Include {
    decisions: bool,
    product_states: bool,
}

fn parse_include(raw: Option<&str>) -> Result<Include, ApiError> {
    let Some(raw) = raw else {
        return Ok(Include {
            decisions: true,
            product_states: true,
        });
    };
    let mut include = Include {
        decisions: false,
        product_states: false,
    };
    for part in raw.split(',').map(str::trim) {
        match part {
            "decisions" => include.decisions = true,
            "product_states" => include.product_states = true,
            _ => {
                return Err(ApiError::invalid_field(
                    "include",
                    "must list decisions and/or product_states, separated by commas",
                ));
            }
        }
    }
    Ok(include)
}

/// The best `limit` of both kinds together, by fused score (decisions first on a tie); each
/// kind keeps its own order.
fn take_best(
    decisions: Vec<FoundDecision>,
    states: Vec<FoundState>,
    limit: usize,
) -> (Vec<FoundDecision>, Vec<FoundState>) {
    let (mut d, mut s) = (0, 0);
    while d + s < limit {
        match (decisions.get(d), states.get(s)) {
            (Some(a), Some(b)) if a.score >= b.score => d += 1,
            (_, Some(_)) => s += 1,
            (Some(_), None) => d += 1,
            (None, None) => break,
        }
    }
    let mut decisions = decisions;
    let mut states = states;
    decisions.truncate(d);
    states.truncate(s);
    (decisions, states)
}

/// Search the caller's decisions and product states: the decisions of the active workspace
pub async fn search(
    state: &AppState,
    caller: &Caller,
    params: &MemorySearchParams,
) -> Result<MemorySearch, ApiError> {
    let started = Instant::now();
    let text = params.q.as_str();
    let limit = params.limit.unwrap_or(LIMIT_DEFAULT);
    let min_similarity = params.min_similarity.unwrap_or(MIN_SIMILARITY_DEFAULT);
    let include = parse_include(params.include.as_deref())?;

    let owner = Owner::of(caller);
    let (vector, previous) = tokio::join!(
        embed_query(state, owner, text),
        embed_previous_query(state, owner, text)
    );
    let vector = vector.map(|v| vector_literal(&v));
    let threshold = f64::from(state.calibration.raw_threshold(min_similarity));
    let query = Query {
        text,
        semantic: vector.as_deref().map(|v| (v, threshold)),
        previous: previous
            .as_ref()
            .filter(|_| vector.is_some())
            .map(PreviousVector::query),
    };
    let mut conn = store::conn(&state.pool).await?;
    let view = crate::ops::scope::view(&mut conn, caller, None).await?;
    let owner = view.owner;
    let (decisions, decisions_total) = if include.decisions {
        let found = db::decisions(&mut conn, view, query, i64::from(limit)).await?;
        let total = found.first().map_or(0, |d| d.total);
        (found, total)
    } else {
        (Vec::new(), 0)
    };
    let states = if include.product_states {
        db::product_states(&mut conn, owner, query).await?
    } else {
        Vec::new()
    };
    drop(conn);

    let total = decisions_total + states.len() as i64;
    let (decisions, states) = take_best(decisions, states, limit as usize);
    let similarity = |cosine: Option<f64>| {
        cosine
            .filter(|_| query.semantic.is_some())
            .map(|c| state.calibration.score(c as f32))
    };
    let decisions: Vec<FoundDecisionBody> = decisions
        .into_iter()
        .map(|d| FoundDecisionBody {
            similarity: similarity(d.cosine),
            decision: Decision::from(d.decision),
        })
        .collect();
    let product_states: Vec<FoundProductState> = states
        .into_iter()
        .map(|found| {
            let s = found.state;
            FoundProductState {
                id: s.id,
                status: s
                    .state
                    .get("status")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                product_name: s.product_name,
                similarity: similarity(s.cosine),
                state: s.state,
                version: s.version,
                updated_at: s.created_at,
            }
        })
        .collect();
    Ok(MemorySearch {
        count: decisions.len() + product_states.len(),
        decisions,
        product_states,
        total,
        search_mode: if query.semantic.is_some() {
            "semantic"
        } else {
            "keyword"
        }
        .to_owned(),
        query: text.to_owned(),
        latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}
