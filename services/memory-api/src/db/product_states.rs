//! Product state: every version kept, the newest current; each change adds a `state_change`
//! item to the owner's intelligence feed in the same transaction.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::feed::{self, NewFeedItem};
use super::owner::Owner;
use super::schema::{product_states, products};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = product_states)]
pub struct StateVersion {
    pub id: Uuid,
    pub version: i32,
    pub state: Value,
    pub created_at: DateTime<Utc>,
}

/// The owned product's current state: `Ok(None)` when the product is not the owner's,
/// `Ok(Some(None))` when it has no state yet.
pub async fn current(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    product_name: &str,
) -> QueryResult<Option<Option<StateVersion>>> {
    let Some(product_id) = product_id(conn, owner, product_name, false).await? else {
        return Ok(None);
    };
    latest(conn, product_id).await.map(Some)
}

async fn product_id(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    name: &str,
    lock: bool,
) -> QueryResult<Option<Uuid>> {
    let query = products::table
        .filter(products::user_id.eq(owner.user_id))
        .filter(products::environment.eq(owner.environment))
        .filter(products::name.eq(name))
        .select(products::id);
    if lock {
        query.for_update().first(conn).await.optional()
    } else {
        query.first(conn).await.optional()
    }
}

async fn latest(
    conn: &mut AsyncPgConnection,
    product_id: Uuid,
) -> QueryResult<Option<StateVersion>> {
    product_states::table
        .filter(product_states::product_id.eq(product_id))
        .order(product_states::version.desc())
        .select(StateVersion::as_select())
        .first(conn)
        .await
        .optional()
}

#[derive(Debug, thiserror::Error)]
pub enum ChangeError<E> {
    #[error("no such product")]
    NotFound,
    #[error("{0}")]
    Rejected(E),
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Applies `change` to the current state (empty before the first) under the product's row
/// lock. A change that alters nothing writes nothing and answers the current version, so a
/// retried request does not add a version or a feed item. The flag says whether a version was
/// added.
pub async fn change<E: Send + 'static>(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    product_name: &str,
    change: impl Fn(&Map<String, Value>) -> Result<Map<String, Value>, E> + Send + Sync,
    summarize: impl Fn(&Map<String, Value>, &Map<String, Value>) -> String + Send + Sync,
) -> Result<(StateVersion, bool), ChangeError<E>> {
    conn.transaction::<_, ChangeError<E>, _>(async |conn| {
        let product_id = product_id(conn, owner, product_name, true)
            .await?
            .ok_or(ChangeError::NotFound)?;
        let current = latest(conn, product_id).await?;
        let before = match current.as_ref().map(|c| &c.state) {
            Some(Value::Object(members)) => members.clone(),
            _ => Map::new(),
        };
        let after = change(&before).map_err(ChangeError::Rejected)?;
        let current_version = current.as_ref().map_or(0, |c| c.version);
        if let Some(current) = current.filter(|_| after == before) {
            return Ok((current, false));
        }
        let version = diesel::insert_into(product_states::table)
            .values((
                product_states::id.eq(Uuid::now_v7()),
                product_states::product_id.eq(product_id),
                product_states::version.eq(current_version + 1),
                product_states::state.eq(Value::Object(after.clone())),
            ))
            .returning(StateVersion::as_returning())
            .get_result(conn)
            .await?;
        let summary = summarize(&before, &after);
        feed::add(
            conn,
            owner,
            NewFeedItem {
                kind: "state_change",
                product_name: Some(product_name),
                summary: &summary,
                severity: "info",
                workspace_id: None,
            },
        )
        .await?;
        Ok((version, true))
    })
    .await
}
