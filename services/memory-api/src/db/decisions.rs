//! Decisions: recorded with a `decision` item in the feed, deleted by their owner, searched.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::embed_pass::{self, EmbedTarget, Pending, due, failure_set, success_set};
use super::products::Owner;
use super::schema::{decisions, feed_items, products};

#[derive(Debug, Clone, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = decisions)]
pub struct Decision {
    pub id: Uuid,
    pub decision: String,
    pub reasoning: Option<String>,
    pub tags: Vec<String>,
    pub product_name: String,
    pub affects_products: Vec<String>,
    pub decided_at: DateTime<Utc>,
}

pub struct NewDecision<'a> {
    pub decision: &'a str,
    pub reasoning: Option<&'a str>,
    pub product_name: &'a str,
    pub affects_products: &'a [String],
    pub tags: Vec<String>,
    /// A pgvector literal, when the embedding could be made.
    pub embedding: Option<&'a str>,
}

/// The names among `names` that are not products of the owner.
pub async fn unknown_products(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    names: &[&str],
) -> QueryResult<Vec<String>> {
    let found: Vec<String> = products::table
        .filter(products::user_id.eq(owner.user_id))
        .filter(products::environment.eq(owner.environment))
        .filter(products::name.eq_any(names))
        .select(products::name)
        .load(conn)
        .await?;
    Ok(names
        .iter()
        .filter(|n| !found.iter().any(|f| f == *n))
        .map(|n| (*n).to_owned())
        .collect())
}

/// Records a decision and its feed item in one transaction.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    new: NewDecision<'_>,
) -> QueryResult<Decision> {
    conn.transaction(async |conn| {
        let decision = diesel::insert_into(decisions::table)
            .values((
                decisions::id.eq(Uuid::now_v7()),
                decisions::user_id.eq(owner.user_id),
                decisions::environment.eq(owner.environment),
                decisions::decision.eq(new.decision),
                decisions::reasoning.eq(new.reasoning),
                decisions::product_name.eq(new.product_name),
                decisions::affects_products.eq(new.affects_products),
                decisions::tags.eq(&new.tags),
            ))
            .returning(Decision::as_returning())
            .get_result(conn)
            .await?;
        if let Some(vector) = new.embedding {
            set_embedding(conn, owner, decision.id, vector).await?;
        }
        let summary: String = new.decision.chars().take(280).collect();
        diesel::insert_into(feed_items::table)
            .values((
                feed_items::id.eq(Uuid::now_v7()),
                feed_items::user_id.eq(owner.user_id),
                feed_items::environment.eq(owner.environment),
                feed_items::kind.eq("decision"),
                feed_items::product_name.eq(new.product_name),
                feed_items::summary.eq(summary),
                feed_items::severity.eq("info"),
            ))
            .execute(conn)
            .await?;
        Ok(decision)
    })
    .await
}

/// Deletes an owned decision; `false` when the owner has no such decision.
pub async fn delete(conn: &mut AsyncPgConnection, owner: Owner<'_>, id: Uuid) -> QueryResult<bool> {
    let deleted = diesel::delete(
        decisions::table
            .filter(decisions::id.eq(id))
            .filter(decisions::user_id.eq(owner.user_id))
            .filter(decisions::environment.eq(owner.environment)),
    )
    .execute(conn)
    .await?;
    Ok(deleted == 1)
}

/// Keyword mode: PostgreSQL full-text search (`websearch_to_tsquery`), best `ts_rank_cd`
/// first, newest first among equals. `product` keeps decisions on or affecting that product.
pub async fn search_keyword(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    query: &str,
    product: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<Decision>> {
    diesel::sql_query(
        "SELECT id, decision, reasoning, tags, product_name, affects_products, decided_at \
         FROM decisions, websearch_to_tsquery('english', $3) AS q \
         WHERE user_id = $1 AND environment = $2 AND search @@ q \
           AND ($4::text IS NULL OR product_name = $4 OR $4 = ANY (affects_products)) \
         ORDER BY ts_rank_cd(search, q) DESC, id DESC \
         LIMIT $5",
    )
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Text, _>(query)
    .bind::<Nullable<Text>, _>(product)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// Stores a decision's embedding (`vector` is a pgvector literal). Ids are unique per owner
/// only (an imported MIF keeps its ids), so the owner is part of the key.
pub async fn set_embedding(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
    vector: &str,
) -> QueryResult<()> {
    diesel::sql_query(<Decisions as EmbedTarget>::STORE)
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(vector)
        .execute(conn)
        .await
        .map(drop)
}

/// Semantic mode: nearest by cosine distance to `vector` (a pgvector literal), among the
/// owner's embedded decisions. When the planner picks the HNSW index (an owner with many
/// decisions), its scan goes on past the first candidates until `limit` of the owner's rows are
/// found (pgvector's iterative scan), so other owners' rows never crowd them out.
pub async fn search_semantic(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    vector: &str,
    product: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<Decision>> {
    conn.transaction(async |conn| {
        diesel::sql_query("SET LOCAL hnsw.iterative_scan = strict_order")
            .execute(conn)
            .await?;
        diesel::sql_query(
            "SELECT id, decision, reasoning, tags, product_name, affects_products, decided_at \
             FROM decisions \
             WHERE user_id = $1 AND environment = $2 AND embedding IS NOT NULL \
               AND ($4::text IS NULL OR product_name = $4 OR $4 = ANY (affects_products)) \
             ORDER BY embedding <=> $3::vector \
             LIMIT $5",
        )
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<Text, _>(vector)
        .bind::<Nullable<Text>, _>(product)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
    })
    .await
}

/// The text a decision is embedded from.
pub fn embedding_text(decision: &str, reasoning: Option<&str>) -> String {
    match reasoning {
        Some(reasoning) => format!("{decision}\n{reasoning}"),
        None => decision.to_owned(),
    }
}

/// Decisions, as the background embedding pass sees them.
pub struct Decisions;

impl EmbedTarget for Decisions {
    const STORE: &'static str = concat!(
        "UPDATE decisions SET ",
        success_set!(),
        " WHERE user_id = $1 AND environment = $2 AND id = $3"
    );
    const RECORD_FAILURE: &'static str = concat!(
        "UPDATE decisions SET ",
        failure_set!(),
        " WHERE user_id = $1 AND environment = $2 AND id = $3"
    );

    async fn pending(conn: &mut AsyncPgConnection, batch: i64) -> QueryResult<Vec<Pending>> {
        embed_pass::load_pending(
            conn,
            concat!(
                "SELECT user_id, environment, id, \
                        decision || coalesce(E'\\n' || reasoning, '') AS text \
                 FROM decisions WHERE ",
                due!(),
                " ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"
            ),
            batch,
        )
        .await
    }
}

/// Embeds up to `batch` decisions stored without an embedding, of any owner; returns how many
/// (see [`embed_pass::run`]).
pub async fn embed_pending<F, Fut, E>(
    conn: &mut AsyncPgConnection,
    batch: i64,
    embed: F,
) -> QueryResult<usize>
where
    F: Fn(Vec<String>) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = Result<Vec<String>, E>> + Send,
    E: std::fmt::Display + Send,
{
    embed_pass::run::<Decisions, _, _, _>(conn, batch, embed).await
}
