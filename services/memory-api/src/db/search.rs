//! `GET /memory/search`: decisions and current product states of one owner that match a query,
//! best first, with how many matched in all.
//!
//! A decision or state matches when its raw cosine to the query reaches the threshold
//! (semantic mode only), or when it matches the query's words (full-text search). Matches are
//! ordered by reciprocal rank fusion of the two rankings, as `/memory/decisions/search` is, and
//! all of them are counted: `total` is exact.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    BigInt, Bool, Double, Float8, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use store::Prepared;
use uuid::Uuid;

use super::decisions::Decision;
use super::embeddings::{PreviousQuery, query_vector};
use super::owner::Owner;
use super::sql;
use super::view::{View, visible};
use crate::domain::search;

/// What the query is matched with.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The words, for full-text search (`websearch_to_tsquery`).
    pub text: &'a str,
    /// The query's embedding as a pgvector literal (semantic mode), and the lowest raw cosine
    /// that counts as a match.
    pub semantic: Option<(&'a str, f64)>,
    /// While rows are re-embedded (semantic mode): the previous model's query vector, which
    /// rows with only the previous model's vector are scored with.
    pub previous: Option<PreviousQuery<'a>>,
}

impl Query<'_> {
    /// The SQL cosine of the row `row` (an alias) to the query: its new vector's to `$new`,
    /// else (while rows are re-embedded) its previous vector's to `$previous`, translated.
    /// Every stored and query vector has unit length (the embedders normalize what they
    /// return), so the cosine is the inner product, which pgvector computes in about two thirds
    /// of the time of its cosine distance (one sum instead of three). The query vector is read
    /// from its text once, in a sub-select (see [`query_vector`]).
    fn cosine_sql(&self, row: &str, new: usize, previous: usize) -> String {
        let cosine = format!("-({row}.embedding <#> {})", query_vector(new));
        match self.previous {
            None => cosine,
            Some(p) => {
                let translated = p.translation.sql(&format!(
                    "-({row}.embedding_previous <#> {})",
                    query_vector(previous)
                ));
                format!("coalesce({cosine}, {translated})")
            }
        }
    }
}

#[derive(Debug, QueryableByName)]
pub struct FoundDecision {
    #[diesel(embed)]
    pub decision: Decision,
    /// Raw cosine to the query (semantic mode, embedded decisions).
    #[diesel(sql_type = Nullable<Double>)]
    pub cosine: Option<f64>,
    /// The fused score (higher is better).
    #[diesel(sql_type = Double)]
    pub score: f64,
    /// How many decisions matched before the limit.
    #[diesel(sql_type = BigInt)]
    pub total: i64,
}

/// The best `limit` matching decisions the view sees.
pub async fn decisions(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    query: Query<'_>,
    limit: i64,
) -> QueryResult<Vec<FoundDecision>> {
    let owner = view.owner;
    let Some((vector, threshold)) = query.semantic else {
        return Prepared(
            diesel::sql_query(format!(
                "SELECT d.id, d.decision, d.reasoning, d.tags, d.product_name, d.affects_products, \
                    d.decided_at, NULL::float8 AS cosine, \
                    (1.0 / (60 + row_number() OVER ( \
                        ORDER BY ts_rank_cd(d.search, q) DESC, d.id DESC)))::float8 AS score, \
                    count(*) OVER () AS total \
             FROM decisions d, websearch_to_tsquery('english', $3) AS q \
             WHERE d.user_id = $1 AND d.environment = $2 AND d.search @@ q AND {} \
             ORDER BY score DESC, d.id DESC \
             LIMIT $4",
                visible("d.workspace_id", 5)
            ))
            .bind::<SqlUuid, _>(owner.user_id)
            .bind::<Text, _>(owner.environment)
            .bind::<Text, _>(query.text)
            .bind::<BigInt, _>(limit)
            .bind::<Nullable<SqlUuid>, _>(view.workspace),
        )
        .load(conn)
        .await;
    };
    let fusion = search::fusion();
    // The semantic matches come from an exact scan of the owner's vectors, so `total` is exact
    // and another owner's rows never crowd the owner's out of an approximate index scan. The
    // keyword matches come from the full-text index apart: testing every scanned row's
    // tsvector instead (compressed in rows this wide) tripled the scan's time. Only ids and
    // scores are ranked, and the rows themselves are read for the best `limit` alone. Ids are
    // unique per owner only (an import keeps the ids it is given), so reading the rows back
    // names the owner too. Both sets are materialized: inlined, their rows would carry the
    // vectors through the join and the rankings' sorts. The scans' subqueries are kept apart
    // (`OFFSET 0`) so that the threshold filters, and the sorts carry, the cosine computed
    // once rather than the vector.
    //
    // Only the keyword matches and the first `limit` semantic ones can be among the best
    // `limit`: a match the keyword ranking lacks scores less than every semantic match ranked
    // above it. So the fused score is computed for those alone, while `total` counts every
    // match of either ranking.
    //
    // The text is the same on every call of a process (but for the previous model's term while
    // rows are re-embedded), so it is kept prepared. PostgreSQL still makes it a custom plan at
    // most searches, which with the query vector in a sub-select takes 0.6 ms over 10,000
    // decisions; folding the vector's literal into the plan took 5.4 ms.
    Prepared(
        diesel::sql_query(format!(
            "WITH semantic AS MATERIALIZED ( \
             SELECT id, cosine, row_number() OVER (ORDER BY cosine DESC, id DESC) AS pos \
             FROM ( \
                 SELECT d.id, {cosine} AS cosine \
                 FROM decisions d \
                 WHERE d.user_id = $1 AND d.environment = $2 AND {visible} \
                 OFFSET 0 \
             ) scored \
             WHERE cosine >= $5 \
         ), keyword AS MATERIALIZED ( \
             SELECT k.id, coalesce(s.cosine, k.cosine) AS cosine, s.pos AS semantic_pos, \
                    k.pos AS keyword_pos \
             FROM ( \
                 SELECT id, cosine, row_number() OVER (ORDER BY rank DESC, id DESC) AS pos \
                 FROM ( \
                     SELECT d.id, ts_rank_cd(d.search, q) AS rank, {cosine} AS cosine \
                     FROM decisions d, websearch_to_tsquery('english', $3) AS q \
                     WHERE d.user_id = $1 AND d.environment = $2 AND {visible} \
                           AND d.search @@ q \
                     OFFSET 0 \
                 ) ranked \
             ) k LEFT JOIN semantic s ON s.id = k.id \
         ), best AS ( \
             SELECT id, cosine, \
                    (SELECT count(*) FROM semantic) \
                    + (SELECT count(*) FROM keyword WHERE semantic_pos IS NULL) AS total, \
                    coalesce({semantic_term}, 0) + coalesce({keyword_term}, 0) AS score \
             FROM ( \
                 SELECT id, cosine, pos AS semantic_pos, NULL::bigint AS keyword_pos \
                 FROM semantic \
                 WHERE pos <= $6 AND id NOT IN (SELECT id FROM keyword) \
                 UNION ALL \
                 SELECT id, cosine, semantic_pos, keyword_pos FROM keyword \
             ) candidates \
             ORDER BY score DESC, id DESC \
             LIMIT $6 \
         ) \
         SELECT d.id, d.decision, d.reasoning, d.tags, d.product_name, d.affects_products, \
                d.decided_at, best.cosine, best.total, best.score \
         FROM best JOIN decisions d \
              ON d.user_id = $1 AND d.environment = $2 AND d.id = best.id \
         ORDER BY best.score DESC, d.id DESC",
            visible = visible("d.workspace_id", 7),
            cosine = query.cosine_sql("d", 4, 8),
            semantic_term = fusion.sql_term(0, "semantic_pos"),
            keyword_term = fusion.sql_term(1, "keyword_pos"),
        ))
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<Text, _>(query.text)
        .bind::<Text, _>(vector)
        .bind::<Float8, _>(threshold)
        .bind::<BigInt, _>(limit)
        .bind::<Nullable<SqlUuid>, _>(view.workspace)
        .bind::<Nullable<Text>, _>(query.previous.map(|p| p.vector)),
    )
    .load(conn)
    .await
}

#[derive(Debug, Clone, QueryableByName)]
pub struct StateCandidate {
    #[diesel(sql_type = Text)]
    pub product_name: String,
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Integer)]
    pub version: i32,
    #[diesel(sql_type = Jsonb)]
    pub state: Value,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    /// Raw cosine to the query (semantic mode); while rows are re-embedded, a state with only
    /// the previous model's vector has that one's, translated.
    #[diesel(sql_type = Nullable<Double>)]
    pub cosine: Option<f64>,
    /// Raw cosine of the previous model's vector to the previous model's query vector.
    #[diesel(sql_type = Nullable<Double>)]
    pub previous_cosine: Option<f64>,
    #[diesel(sql_type = Bool)]
    pub keyword_hit: bool,
    #[diesel(sql_type = Float8)]
    pub keyword_rank: f64,
}

#[derive(Debug, Clone)]
pub struct FoundState {
    pub state: StateCandidate,
    pub score: f64,
}

/// The matching current states of the owner's products, best first, all of them (an owner has
/// few products; the caller applies the limit).
pub async fn product_states(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    query: Query<'_>,
) -> QueryResult<Vec<FoundState>> {
    let mut candidates: Vec<StateCandidate> = Prepared(
        diesel::sql_query(sql::search::PRODUCT_STATES)
            .bind::<SqlUuid, _>(owner.user_id)
            .bind::<Text, _>(owner.environment)
            .bind::<Text, _>(query.text)
            .bind::<Nullable<Text>, _>(query.semantic.map(|(vector, _)| vector))
            .bind::<Nullable<Text>, _>(query.previous.map(|p| p.vector)),
    )
    .load(conn)
    .await?;
    if let Some(previous) = query.previous {
        for c in &mut candidates {
            if c.cosine.is_none() {
                c.cosine = c.previous_cosine.map(|p| previous.translation.cosine(p));
            }
        }
    }
    Ok(rank_states(candidates, query.semantic.map(|(_, t)| t)))
}

/// Keeps the matches and orders them by fused rank.
fn rank_states(candidates: Vec<StateCandidate>, threshold: Option<f64>) -> Vec<FoundState> {
    let semantic_match =
        |c: &StateCandidate| threshold.is_some_and(|t| c.cosine.is_some_and(|cosine| cosine >= t));
    let mut semantic: Vec<&StateCandidate> =
        candidates.iter().filter(|c| semantic_match(c)).collect();
    semantic.sort_by(|a, b| {
        b.cosine
            .unwrap_or(0.0)
            .total_cmp(&a.cosine.unwrap_or(0.0))
            .then(b.id.cmp(&a.id))
    });
    let mut keyword: Vec<&StateCandidate> = candidates.iter().filter(|c| c.keyword_hit).collect();
    keyword.sort_by(|a, b| {
        b.keyword_rank
            .total_cmp(&a.keyword_rank)
            .then(b.id.cmp(&a.id))
    });
    let scored = search::fuse_scored(&[
        semantic.iter().map(|c| c.id).collect(),
        keyword.iter().map(|c| c.id).collect(),
    ]);
    scored
        .into_iter()
        .filter_map(|(id, score)| {
            candidates.iter().find(|c| c.id == id).map(|c| FoundState {
                state: c.clone(),
                score,
            })
        })
        .collect()
}
