//! Product state: every version kept, the newest current; each change adds a `state_change`
//! item to the owner's intelligence feed in the same transaction.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::embed_pass::{self, EmbedTarget, Pending, due, failure_set, success_set};
use super::products::Owner;
use super::schema::{feed_items, product_states, products};

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
        diesel::insert_into(feed_items::table)
            .values((
                feed_items::id.eq(Uuid::now_v7()),
                feed_items::user_id.eq(owner.user_id),
                feed_items::environment.eq(owner.environment),
                feed_items::kind.eq("state_change"),
                feed_items::product_name.eq(product_name),
                feed_items::summary.eq(summarize(&before, &after)),
                feed_items::severity.eq("info"),
            ))
            .execute(conn)
            .await?;
        Ok((version, true))
    })
    .await
}

/// Stores the embedding of a state version of the owner's (`vector` is a pgvector literal).
pub async fn set_embedding(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
    vector: &str,
) -> QueryResult<()> {
    diesel::sql_query(<States as EmbedTarget>::STORE)
        .bind::<diesel::sql_types::Uuid, _>(owner.user_id)
        .bind::<diesel::sql_types::Text, _>(owner.environment)
        .bind::<diesel::sql_types::Uuid, _>(id)
        .bind::<diesel::sql_types::Text, _>(vector)
        .execute(conn)
        .await
        .map(drop)
}

/// Current product states, as the background embedding pass sees them (a state version has
/// no owner of its own: its product's is named).
pub struct States;

impl EmbedTarget for States {
    const STORE: &'static str = concat!(
        "UPDATE product_states s SET ",
        success_set!(),
        " FROM products p \
         WHERE p.user_id = $1 AND p.environment = $2 AND s.product_id = p.id AND s.id = $3"
    );
    const RECORD_FAILURE: &'static str = concat!(
        "UPDATE product_states s SET ",
        failure_set!(),
        " FROM products p \
         WHERE p.user_id = $1 AND p.environment = $2 AND s.product_id = p.id AND s.id = $3"
    );

    async fn pending(conn: &mut AsyncPgConnection, batch: i64) -> QueryResult<Vec<Pending>> {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            user_id: Uuid,
            #[diesel(sql_type = diesel::sql_types::Text)]
            environment: String,
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            id: Uuid,
            #[diesel(sql_type = diesel::sql_types::Text)]
            product_name: String,
            #[diesel(sql_type = diesel::sql_types::Jsonb)]
            state: Value,
        }
        let rows: Vec<Row> = diesel::sql_query(concat!(
            "SELECT p.user_id, p.environment, s.id, p.name AS product_name, s.state \
             FROM product_states s JOIN products p ON p.id = s.product_id \
             WHERE s.",
            due!(),
            " AND s.version = (SELECT max(version) FROM product_states WHERE product_id = s.product_id) \
             ORDER BY s.id LIMIT $1 FOR UPDATE OF s SKIP LOCKED"
        ))
        .bind::<diesel::sql_types::BigInt, _>(batch)
        .load(conn)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| Pending {
                text: match &r.state {
                    Value::Object(members) => {
                        crate::domain::state_text::render(&r.product_name, members)
                    }
                    _ => r.product_name.clone(),
                },
                user_id: r.user_id,
                environment: r.environment,
                id: r.id,
            })
            .collect())
    }
}

/// Embeds up to `batch` current state versions stored without an embedding, of any owner;
/// returns how many (see [`embed_pass::run`]).
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
    embed_pass::run::<States, _, _, _>(conn, batch, embed).await
}
