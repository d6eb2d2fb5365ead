//! Decisions: recorded with a `decision` item in the feed, deleted by their owner, searched.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::embeddings::{self, DECISIONS};
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
                decisions::workspace_id.eq(view.workspace),
            ))
            .returning(Decision::as_returning())
            .get_result(conn)
            .await?;
        if let Some(vector) = new.embedding {
            embeddings::set_embedding(conn, &DECISIONS, owner, decision.id, vector).await?;
        }
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

/// What a decision is embedded from (as [`DECISIONS`] selects it in SQL): its words and
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
