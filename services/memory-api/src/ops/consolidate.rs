//! Consolidation runs: duplicate and stale-memory candidates found within a token budget,
//! recorded (a run never changes a memory), and read back with their evidence.

use std::collections::HashSet;

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::ApiError;
use rate_limit::policy::Tier;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::consolidation::{self as db, Memory};
use crate::db::owner::Owner;
use crate::domain::consolidation::{self, ItemKind, Pair, ReadItem, SUPERSEDED_SIMILARITY};
use crate::domain::{text, tokens};

const BUDGET_DEFAULT: u64 = 2000;

const PAGE: i64 = 100;

/// The optional body of `POST /memory/consolidate` (no body, a blank one or `null` is `{}`).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ConsolidateRequest {
    /// The workspace whose memory is read (with the account-wide memory), one of the
    /// caller's; default the credential's active workspace (see `GET /scope`). Recorded with
    /// the run.
    #[schema(
        pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    pub workspace_id: Option<Uuid>,
    /// 1..=5000 (default 2000): o200k_base tokens of memories to read, newest first.
    #[schema(minimum = 1, maximum = 5000)]
    pub compute_budget_tokens: Option<u32>,
}

impl http_kit::Validate for ConsolidateRequest {}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConsolidateResult {
    /// `completed` (every memory was read) or `budget_exhausted`.
    pub status: String,
    #[serde(rename = "runId")]
    pub run_id: Uuid,
    /// Duplicate candidates recorded (decisions and free-form entries).
    #[serde(rename = "corpusDeduplicated")]
    pub corpus_deduplicated: i32,
    /// Decisions recorded as stale candidates.
    #[serde(rename = "staleDecisionsFlagged")]
    pub stale_decisions_flagged: i32,
    /// Duplicate candidates / memories read (0 when nothing was read).
    #[serde(rename = "redundancyScore")]
    pub redundancy_score: f64,
}

pub fn budget(body: &[u8]) -> Result<(u64, Option<Uuid>), ApiError> {
    let request = if body.iter().all(u8::is_ascii_whitespace) {
        ConsolidateRequest::default()
    } else {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::invalid_field("body", &format!("is malformed JSON: {e}")))?;
        if value.is_null() {
            ConsolidateRequest::default()
        } else {
            http_kit::read_body(value)?
        }
    };
    let budget = request
        .compute_budget_tokens
        .map_or(BUDGET_DEFAULT, u64::from);
    Ok((budget, request.workspace_id))
}

fn kind_of(m: &Memory) -> ItemKind {
    ItemKind::parse(&m.kind).unwrap_or(ItemKind::Corpus)
}

/// A memory named by a candidate.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryRef {
    /// `decision` or `corpus` (a free-form entry).
    #[serde(rename = "type")]
    pub kind: String,
    pub id: Uuid,
}

/// One recorded candidate and its evidence.
#[derive(Debug, Serialize, ToSchema)]
pub struct CandidateBody {
    /// `duplicate` or `stale`.
    pub kind: String,
    /// `same_normalized_text`, `embedding_similarity` (duplicates); `superseded`,
    /// `old_unreferenced` (stale decisions).
    pub rule: String,
    /// The candidate (the older memory).
    pub item: MemoryRef,
    /// The newer memory it duplicates or that supersedes it; null for `old_unreferenced`.
    pub other: Option<MemoryRef>,
    /// The raw embedding cosine of the pair; null for rules that compare no embeddings.
    pub similarity: Option<f64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConsolidationRun {
    #[serde(rename = "runId")]
    pub run_id: Uuid,
    pub status: String,
    #[serde(rename = "createdAt")]
    pub created_at: DateTime<Utc>,
    #[serde(rename = "workspaceId")]
    pub workspace_id: Option<Uuid>,
    #[serde(rename = "computeBudgetTokens")]
    pub compute_budget_tokens: i32,
    #[serde(rename = "tokensRead")]
    pub tokens_read: i32,
    #[serde(rename = "itemsRead")]
    pub items_read: i32,
    #[serde(rename = "corpusDeduplicated")]
    pub corpus_deduplicated: i32,
    #[serde(rename = "staleDecisionsFlagged")]
    pub stale_decisions_flagged: i32,
    #[serde(rename = "redundancyScore")]
    pub redundancy_score: f64,
    pub candidates: Vec<CandidateBody>,
}

/// A consolidation run of the caller and its candidates (tier pro or above).
pub async fn get_run(
    pool: &Pool,
    caller: &Caller,
    run_id: Uuid,
) -> Result<ConsolidationRun, ApiError> {
    caller.require_tier(Tier::Pro)?;
    let mut conn = store::conn(pool).await?;
    let (run, candidates) = db::find(&mut conn, Owner::of(caller), run_id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such consolidation run"))?;
    Ok(ConsolidationRun {
        run_id: run.id,
        status: run.status,
        created_at: run.created_at,
        workspace_id: run.workspace_id,
        compute_budget_tokens: run.compute_budget_tokens,
        tokens_read: run.tokens_read,
        items_read: run.items_read,
        corpus_deduplicated: run.corpus_deduplicated,
        stale_decisions_flagged: run.stale_decisions_flagged,
        redundancy_score: run.redundancy_score,
        candidates: candidates
            .into_iter()
            .map(|c| CandidateBody {
                kind: c.kind,
                rule: c.rule,
                item: MemoryRef {
                    kind: c.item_type,
                    id: c.item_id,
                },
                other: c
                    .other_type
                    .zip(c.other_id)
                    .map(|(kind, id)| MemoryRef { kind, id }),
                similarity: c.similarity,
            })
            .collect(),
    })
}

/// Reads the caller's newest memory within the budget and records the candidates it finds
/// (duplicates, stale decisions) as a consolidation run.
pub async fn consolidate(
    pool: &Pool,
    caller: &Caller,
    budget: u64,
    workspace_id: Option<Uuid>,
) -> Result<ConsolidateResult, ApiError> {
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    let owner = Owner::of(caller);
    let mut conn = store::conn(pool).await?;
    let view = crate::ops::scope::view(&mut conn, caller, workspace_id).await?;

    let mut read: Vec<Memory> = Vec::new();
    let mut used = 0;
    let mut exhausted = false;
    let mut after = None;
    loop {
        let page = db::newest(&mut conn, view, after, PAGE).await?;
        let sizes: Vec<usize> = page.iter().map(|m| tokens::count(&m.body)).collect();
        let (fits, spent) = consolidation::within_budget(&sizes, budget - used);
        used += spent;
        let full_page = page.len() as i64 == PAGE;
        if fits < page.len() {
            exhausted = true;
        }
        after = page.last().map(|m| (m.at, m.id));
        read.extend(page.into_iter().take(fits));
        if exhausted || !full_page {
            break;
        }
    }

    let kinds: Vec<String> = read.iter().map(|m| m.kind.clone()).collect();
    let ids: Vec<Uuid> = read.iter().map(|m| m.id).collect();
    let pairs: Vec<Pair> = if read.len() > 1 {
        db::similar_pairs(&mut conn, owner, &kinds, &ids, SUPERSEDED_SIMILARITY)
            .await?
            .into_iter()
            .filter_map(|p| {
                Some(Pair {
                    a: (ItemKind::parse(&p.a_kind)?, p.a_id),
                    b: (ItemKind::parse(&p.b_kind)?, p.b_id),
                    similarity: p.similarity,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    // Decisions a producer signal names in its `related_decisions` are never stale by age.
    let decision_ids: Vec<Uuid> = read
        .iter()
        .filter(|m| kind_of(m) == ItemKind::Decision)
        .map(|m| m.id)
        .collect();
    let referenced = db::referenced_by_signals(&mut conn, owner, &decision_ids).await?;
    let items: Vec<ReadItem> = read
        .iter()
        .map(|m| ReadItem {
            item: (kind_of(m), m.id),
            normalized: text::normalize(&m.text),
            product: m.product_name.clone(),
            at: m.at,
            referenced: kind_of(m) == ItemKind::Decision && referenced.contains(&m.id),
        })
        .collect();
    let now = Utc::now();
    let found = consolidation::candidates(&items, &pairs, now);
    let duplicates: HashSet<_> = found
        .iter()
        .filter(|c| c.rule.kind() == "duplicate")
        .map(|c| c.item)
        .collect();
    let stale: HashSet<_> = found
        .iter()
        .filter(|c| c.rule.kind() == "stale")
        .map(|c| c.item)
        .collect();
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let redundancy = if read.is_empty() {
        0.0
    } else {
        duplicates.len() as f64 / read.len() as f64
    };
    let run = db::Run {
        id: Uuid::now_v7(),
        workspace_id: view.workspace,
        status: if exhausted {
            "budget_exhausted"
        } else {
            "completed"
        }
        .to_owned(),
        compute_budget_tokens: count(budget),
        tokens_read: count(used),
        items_read: count(read.len()),
        corpus_deduplicated: count(duplicates.len()),
        stale_decisions_flagged: count(stale.len()),
        redundancy_score: redundancy,
        created_at: now,
    };
    let candidates: Vec<db::Candidate> = found
        .iter()
        .map(|c| db::Candidate {
            kind: c.rule.kind().to_owned(),
            rule: c.rule.as_str().to_owned(),
            item_type: c.item.0.as_str().to_owned(),
            item_id: c.item.1,
            other_type: c.other.map(|o| o.0.as_str().to_owned()),
            other_id: c.other.map(|o| o.1),
            similarity: c.similarity,
        })
        .collect();
    db::record(&mut conn, owner, &run, &candidates).await?;
    Ok(ConsolidateResult {
        status: run.status,
        run_id: run.id,
        corpus_deduplicated: run.corpus_deduplicated,
        stale_decisions_flagged: run.stale_decisions_flagged,
        redundancy_score: run.redundancy_score,
    })
}
