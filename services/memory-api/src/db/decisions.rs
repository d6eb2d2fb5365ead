//! Decisions: recorded with a `decision` item in the feed, deleted by their owner, searched.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::embeddings::{self, DECISIONS};
use super::owner::Owner;
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
            embeddings::set_embedding(conn, &DECISIONS, owner, decision.id, vector).await?;
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

/// The text a decision is embedded from (as [`DECISIONS`] writes it in SQL).
pub fn embedding_text(decision: &str, reasoning: Option<&str>) -> String {
    match reasoning {
        Some(reasoning) => format!("{decision}\n{reasoning}"),
        None => decision.to_owned(),
    }
}
