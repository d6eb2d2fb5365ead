//! The background embedding pass over one table: take a batch of rows still without an
//! embedding (disjoint across replicas), embed them, store the vectors (one UPDATE for the
//! whole batch, every owner's rows in it). When an owner's rows fail,
//! its rows are embedded one by one, so that one input the provider refuses holds up no other
//! row: that row alone records the error and is set aside with an exponential backoff.

use std::fmt::Display;
use std::future::Future;

use diesel::QueryResult;
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use embed::Passage;
use serde_json::Value;
use uuid::Uuid;

use super::table::{DUE, FAILURE_SET, SUCCESS_SET_MANY, Shape, Table};
use super::update_one;
use crate::db::owner::Owner;
use crate::domain::state_text;

/// Which row of which owner.
#[derive(QueryableByName)]
struct RowKey {
    #[diesel(sql_type = SqlUuid)]
    user_id: Uuid,
    #[diesel(sql_type = Text)]
    environment: String,
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

/// A row waiting for its embedding, with the text (and lead) it is embedded from.
#[derive(QueryableByName)]
struct Pending {
    #[diesel(embed)]
    key: RowKey,
    #[diesel(sql_type = Text)]
    text: String,
    #[diesel(sql_type = Nullable<Text>)]
    lead: Option<String>,
}

impl Pending {
    fn passage(&self) -> Passage {
        Passage {
            text: self.text.clone(),
            lead: self.lead.clone(),
        }
    }

    fn owner(&self) -> Owner<'_> {
        Owner {
            user_id: self.key.user_id,
            environment: &self.key.environment,
        }
    }

    /// Runs `sql`, an UPDATE of this row, with `value` as `$4`.
    async fn update(
        &self,
        conn: &mut AsyncPgConnection,
        sql: &str,
        value: &str,
    ) -> QueryResult<()> {
        update_one(conn, sql, self.owner(), self.key.id, value).await
    }
}

/// At most this many characters of a provider's error are kept.
const ERROR_MAX_CHARS: usize = 1000;

/// Embeds up to `batch` rows of `table` stored without an embedding (of any owner) whose retry
/// time has come; returns how many were embedded. `embed` turns one owner's passages into pgvector
/// literals (so each owner's rows go through that owner's own credential, when stored).
pub async fn embed_pending<F, Fut, E>(
    conn: &mut AsyncPgConnection,
    table: &Table,
    batch: i64,
    embed: F,
) -> QueryResult<usize>
where
    F: for<'o> Fn(Owner<'o>, Vec<Passage>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<String>, E>> + Send,
    E: Display + Send,
{
    let failed = table.update_one(FAILURE_SET);
    conn.transaction(async |conn| {
        let rows = pending(conn, table, batch).await?;
        let mut embedded = Vec::with_capacity(rows.len());
        for group in by_owner(&rows) {
            embedded.extend(embed_group(conn, &failed, &group, &embed).await?);
        }
        store(conn, table, &embedded).await?;
        Ok(embedded.len())
    })
    .await
}

/// A row and its vector (a pgvector literal).
type Embedded<'r> = (&'r Pending, String);

/// Stores every vector of `embedded` in one UPDATE (each row under its own owner: ids are
/// unique per owner only).
async fn store(
    conn: &mut AsyncPgConnection,
    table: &Table,
    embedded: &[Embedded<'_>],
) -> QueryResult<()> {
    if embedded.is_empty() {
        return Ok(());
    }
    let users: Vec<Uuid> = embedded.iter().map(|(r, _)| r.key.user_id).collect();
    let environments: Vec<&str> = embedded
        .iter()
        .map(|(r, _)| r.key.environment.as_str())
        .collect();
    let ids: Vec<Uuid> = embedded.iter().map(|(r, _)| r.key.id).collect();
    let vectors: Vec<&str> = embedded.iter().map(|(_, v)| v.as_str()).collect();
    diesel::sql_query(table.update_many(SUCCESS_SET_MANY))
        .bind::<Array<SqlUuid>, _>(users)
        .bind::<Array<Text>, _>(environments)
        .bind::<Array<SqlUuid>, _>(ids)
        .bind::<Array<Text>, _>(vectors)
        .execute(conn)
        .await
        .map(drop)
}

/// `rows` split by owner, each group in the rows' order.
fn by_owner(rows: &[Pending]) -> Vec<Vec<&Pending>> {
    let mut groups: Vec<Vec<&Pending>> = Vec::new();
    for row in rows {
        let same = |g: &&mut Vec<&Pending>| {
            g[0].key.user_id == row.key.user_id && g[0].key.environment == row.key.environment
        };
        match groups.iter_mut().find(same) {
            Some(group) => group.push(row),
            None => groups.push(vec![row]),
        }
    }
    groups
}

/// Embeds one owner's rows in one call; when that fails, one by one, so that a row the
/// provider refuses holds up no other. Returns the rows embedded, with their vectors (the
/// failures are recorded, with `failed`, the table's failure UPDATE).
async fn embed_group<'r, F, Fut, E>(
    conn: &mut AsyncPgConnection,
    failed: &str,
    rows: &[&'r Pending],
    embed: &F,
) -> QueryResult<Vec<Embedded<'r>>>
where
    F: for<'o> Fn(Owner<'o>, Vec<Passage>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<String>, E>> + Send,
    E: Display + Send,
{
    let owner = rows[0].owner();
    let passages = rows.iter().map(|r| r.passage()).collect();
    let failure = match embed(owner, passages).await {
        Ok(vectors) if vectors.len() == rows.len() => {
            return Ok(rows.iter().copied().zip(vectors).collect());
        }
        Ok(vectors) => format!("{} vectors for {} texts", vectors.len(), rows.len()),
        Err(err) => err.to_string(),
    };
    if let [row] = rows {
        record_failure(conn, failed, row, &failure).await?;
        return Ok(Vec::new());
    }
    let mut embedded = Vec::new();
    for row in rows {
        match embed(owner, vec![row.passage()]).await {
            Ok(mut vectors) if vectors.len() == 1 => embedded.push((*row, vectors.remove(0))),
            Ok(vectors) => {
                let error = format!("{} vectors for 1 text", vectors.len());
                record_failure(conn, failed, row, &error).await?;
            }
            Err(err) => record_failure(conn, failed, row, &err.to_string()).await?,
        }
    }
    Ok(embedded)
}

/// Records `error` against `row` with `sql` (the table's failure UPDATE).
async fn record_failure(
    conn: &mut AsyncPgConnection,
    sql: &str,
    row: &Pending,
    error: &str,
) -> QueryResult<()> {
    let error: String = error.chars().take(ERROR_MAX_CHARS).collect();
    tracing::warn!(id = %row.key.id, error, "embedding failed; the row is retried later");
    row.update(conn, sql, &error).await
}

/// Up to `batch` rows of `table` to embed now, oldest first, locked for this transaction
/// (`FOR UPDATE SKIP LOCKED`, so replicas take disjoint rows).
async fn pending(
    conn: &mut AsyncPgConnection,
    table: &Table,
    batch: i64,
) -> QueryResult<Vec<Pending>> {
    let name = table.name;
    match table.shape {
        Shape::Owned { text, lead } => {
            let lead = lead.unwrap_or("NULL::text");
            let sql = format!(
                "SELECT user_id, environment, id, {text} AS text, {lead} AS lead \
                 FROM {name} WHERE {DUE} \
                 ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"
            );
            diesel::sql_query(sql)
                .bind::<BigInt, _>(batch)
                .load(conn)
                .await
        }
        Shape::ProductState => {
            let sql = format!(
                "SELECT p.user_id, p.environment, s.id, p.name AS product_name, s.state \
                 FROM {name} s JOIN products p ON p.id = s.product_id \
                 WHERE s.{DUE} \
                   AND s.version = (SELECT max(version) FROM {name} WHERE product_id = s.product_id) \
                 ORDER BY s.id LIMIT $1 FOR UPDATE OF s SKIP LOCKED"
            );
            let rows: Vec<StateRow> = diesel::sql_query(sql)
                .bind::<BigInt, _>(batch)
                .load(conn)
                .await?;
            Ok(rows.into_iter().map(StateRow::into_pending).collect())
        }
    }
}

#[derive(QueryableByName)]
struct StateRow {
    #[diesel(embed)]
    key: RowKey,
    #[diesel(sql_type = Text)]
    product_name: String,
    #[diesel(sql_type = Jsonb)]
    state: Value,
}

impl StateRow {
    fn into_pending(self) -> Pending {
        let text = match &self.state {
            Value::Object(members) => state_text::render(&self.product_name, members),
            _ => self.product_name.clone(),
        };
        Pending {
            key: self.key,
            text,
            lead: None,
        }
    }
}
