//! Decisions: recorded with a `decision` item in the feed, deleted by their owner, searched.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::feed::{self, NewFeedItem};
use super::owner::Owner;
use super::schema::{decisions, products};
use super::view::View;

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

/// Records a decision and its feed item in one transaction, in the view's workspace.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    new: NewDecision<'_>,
) -> QueryResult<Decision> {
    let owner = view.owner;
    conn.transaction(async |conn| {
        // Raw SQL: the vector column is not in the Diesel schema. The vector goes in with the
        // row, so that every index entry of the row is written once.
        let decision: Decision = diesel::sql_query(
            "INSERT INTO decisions (id, user_id, environment, decision, reasoning, product_name, \
                 affects_products, tags, workspace_id, embedding) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::vector) \
             RETURNING id, decision, reasoning, tags, product_name, affects_products, decided_at",
        )
        .bind::<SqlUuid, _>(Uuid::now_v7())
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<Text, _>(new.decision)
        .bind::<Nullable<Text>, _>(new.reasoning)
        .bind::<Text, _>(new.product_name)
        .bind::<Array<Text>, _>(new.affects_products)
        .bind::<Array<Text>, _>(&new.tags)
        .bind::<Nullable<SqlUuid>, _>(view.workspace)
        .bind::<Nullable<Text>, _>(new.embedding)
        .get_result(conn)
        .await?;
        let summary: String = new.decision.chars().take(280).collect();
        feed::add(
            conn,
            owner,
            NewFeedItem {
                kind: "decision",
                product_name: Some(new.product_name),
                summary: &summary,
                severity: "info",
                workspace_id: view.workspace,
            },
        )
        .await?;
        Ok(decision)
    })
    .await
}

/// Deletes a decision the view sees; `false` when it sees no such decision.
pub async fn delete(conn: &mut AsyncPgConnection, view: View<'_>, id: Uuid) -> QueryResult<bool> {
    let owner = view.owner;
    let mut target = diesel::delete(decisions::table)
        .filter(decisions::id.eq(id))
        .filter(decisions::user_id.eq(owner.user_id))
        .filter(decisions::environment.eq(owner.environment))
        .into_boxed();
    if let Some(workspace) = view.workspace {
        target = target.filter(
            decisions::workspace_id
                .is_null()
                .or(decisions::workspace_id.eq(workspace)),
        );
    }
    Ok(target.execute(conn).await? == 1)
}

/// What a decision is embedded from (as [`super::embeddings::DECISIONS`] selects it in SQL): its words and
/// reasoning, led by its words.
pub fn embedding_passage(decision: &str, reasoning: Option<&str>) -> embed::Passage {
    embed::Passage {
        text: match reasoning {
            Some(reasoning) => format!("{decision}\n{reasoning}"),
            None => decision.to_owned(),
        },
        lead: Some(decision.to_owned()),
    }
}
