//! Consolidation runs: what a run reads (newest first), embedding pairs among what it read,
//! and the recorded runs with their candidates.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Double, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::owner::Owner;
use super::schema::{consolidation_candidates as c, consolidation_runs as r};
use super::sql;
use super::view::{View, visible};

/// A decision or free-form entry, as a run reads it.
#[derive(Debug, Clone, QueryableByName)]
pub struct Memory {
    /// `decision` or `corpus`.
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    /// What counts against the budget: the decision and its reasoning, or the content.
    #[diesel(sql_type = Text)]
    pub body: String,
    /// What is compared for "the same text": the decision, or the content.
    #[diesel(sql_type = Text)]
    pub text: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub product_name: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    pub at: DateTime<Utc>,
}

/// Up to `limit` of the decisions and entries the view sees, newest first, after `after` (the
/// time and id of the last one read).
pub async fn newest(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> QueryResult<Vec<Memory>> {
    let owner = view.owner;
    let visible = visible("workspace_id", 6);
    diesel::sql_query(format!(
        "SELECT kind, id, body, text, product_name, at FROM ( \
             SELECT 'decision' AS kind, id, \
                    decision || coalesce(E'\\n' || reasoning, '') AS body, decision AS text, \
                    product_name, decided_at AS at \
             FROM decisions WHERE user_id = $1 AND environment = $2 AND {visible} \
             UNION ALL \
             SELECT 'corpus', id, content, content, NULL, created_at \
             FROM free_form_entries WHERE user_id = $1 AND environment = $2 AND {visible} \
         ) m \
         WHERE $3::timestamptz IS NULL OR (at, id) < ($3, $4) \
         ORDER BY at DESC, id DESC LIMIT $5",
    ))
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Nullable<Timestamptz>, _>(after.map(|a| a.0))
    .bind::<Nullable<SqlUuid>, _>(after.map(|a| a.1))
    .bind::<BigInt, _>(limit)
    .bind::<Nullable<SqlUuid>, _>(view.workspace)
    .load(conn)
    .await
}

#[derive(Debug, Clone, QueryableByName)]
pub struct SimilarPair {
    #[diesel(sql_type = Text)]
    pub a_kind: String,
    #[diesel(sql_type = SqlUuid)]
    pub a_id: Uuid,
    #[diesel(sql_type = Text)]
    pub b_kind: String,
    #[diesel(sql_type = SqlUuid)]
    pub b_id: Uuid,
    #[diesel(sql_type = Double)]
    pub similarity: f64,
}

/// Pairs among the given items (kinds and ids side by side) whose embeddings have a raw cosine
/// of at least `threshold`. Items not embedded yet take no part.
pub async fn similar_pairs(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    kinds: &[String],
    ids: &[Uuid],
    threshold: f64,
) -> QueryResult<Vec<SimilarPair>> {
    diesel::sql_query(sql::consolidation::SIMILAR_PAIRS)
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<Array<Text>, _>(kinds)
        .bind::<Array<SqlUuid>, _>(ids)
        .bind::<Double, _>(threshold)
        .load(conn)
        .await
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = r)]
pub struct Run {
    pub id: Uuid,
    pub workspace_id: Option<Uuid>,
    pub status: String,
    pub compute_budget_tokens: i32,
    pub tokens_read: i32,
    pub items_read: i32,
    pub corpus_deduplicated: i32,
    pub stale_decisions_flagged: i32,
    pub redundancy_score: f64,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = c)]
pub struct Candidate {
    pub kind: String,
    pub rule: String,
    pub item_type: String,
    pub item_id: Uuid,
    pub other_type: Option<String>,
    pub other_id: Option<Uuid>,
    pub similarity: Option<f64>,
}

/// Records a run and its candidates in one transaction.
pub async fn record(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    run: &Run,
    candidates: &[Candidate],
) -> QueryResult<()> {
    conn.transaction(async |conn| {
        diesel::insert_into(r::table)
            .values((
                r::id.eq(run.id),
                r::user_id.eq(owner.user_id),
                r::environment.eq(owner.environment),
                r::workspace_id.eq(run.workspace_id),
                r::status.eq(&run.status),
                r::compute_budget_tokens.eq(run.compute_budget_tokens),
                r::tokens_read.eq(run.tokens_read),
                r::items_read.eq(run.items_read),
                r::corpus_deduplicated.eq(run.corpus_deduplicated),
                r::stale_decisions_flagged.eq(run.stale_decisions_flagged),
                r::redundancy_score.eq(run.redundancy_score),
                r::created_at.eq(run.created_at),
            ))
            .execute(conn)
            .await?;
        for (chunk_no, chunk) in candidates.chunks(1000).enumerate() {
            let rows: Vec<_> = chunk
                .iter()
                .enumerate()
                .map(|(i, cand)| {
                    (
                        c::run_id.eq(run.id),
                        c::position.eq(i32::try_from(chunk_no * 1000 + i).unwrap_or(i32::MAX)),
                        c::kind.eq(&cand.kind),
                        c::rule.eq(&cand.rule),
                        c::item_type.eq(&cand.item_type),
                        c::item_id.eq(cand.item_id),
                        c::other_type.eq(cand.other_type.as_deref()),
                        c::other_id.eq(cand.other_id),
                        c::similarity.eq(cand.similarity),
                    )
                })
                .collect();
            diesel::insert_into(c::table)
                .values(rows)
                .execute(conn)
                .await?;
        }
        Ok(())
    })
    .await
}

/// The owner's run `id` and its candidates in the order they were found.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<(Run, Vec<Candidate>)>> {
    let Some(run) = r::table
        .filter(r::id.eq(id))
        .filter(r::user_id.eq(owner.user_id))
        .filter(r::environment.eq(owner.environment))
        .select(Run::as_select())
        .first(conn)
        .await
        .optional()?
    else {
        return Ok(None);
    };
    let candidates = c::table
        .inner_join(r::table)
        .filter(c::run_id.eq(id))
        .filter(r::user_id.eq(owner.user_id))
        .filter(r::environment.eq(owner.environment))
        .order(c::position)
        .select(Candidate::as_select())
        .load(conn)
        .await?;
    Ok(Some((run, candidates)))
}

/// Which of `ids` (decisions of the owner) a producer signal of the owner references.
pub async fn referenced_by_signals(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    ids: &[Uuid],
) -> QueryResult<HashSet<Uuid>> {
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    #[derive(QueryableByName)]
    struct IdRow {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let rows: Vec<IdRow> = diesel::sql_query(
        "SELECT DISTINCT d.id FROM producer_signals s, unnest(s.related_decisions) AS d(id) \
         WHERE s.user_id = $1 AND s.environment = $2 AND s.related_decisions <> '{}' \
           AND s.related_decisions && $3 AND d.id = ANY($3)",
    )
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Array<SqlUuid>, _>(ids)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}
