//! The background embedding pass over one table: take a batch of rows still without an
//! embedding (disjoint across replicas), embed them, store the vectors. When the batch fails,
//! its rows are embedded one by one, so that one input the provider refuses holds up no other
//! row: that row alone records the error and is set aside with an exponential backoff.

use std::fmt::Display;
use std::future::Future;

use diesel::QueryResult;
use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::products::Owner;

/// A row waiting for its embedding, with the text it is embedded from.
pub struct Pending {
    pub user_id: Uuid,
    pub environment: String,
    pub id: Uuid,
    pub text: String,
}

impl Pending {
    pub fn owner(&self) -> Owner<'_> {
        Owner {
            user_id: self.user_id,
            environment: &self.environment,
        }
    }
}

/// What the pass needs of a table. `STORE` and `RECORD_FAILURE` are UPDATEs of one row bound
/// as `$1` user, `$2` environment, `$3` id, and `$4` the vector (a pgvector literal) or the
/// error; their SET lists are [`success_set!`] and [`failure_set!`].
pub trait EmbedTarget {
    const STORE: &'static str;
    const RECORD_FAILURE: &'static str;

    /// Up to `batch` rows still to embed whose retry time has come, locked for this
    /// transaction (`FOR UPDATE SKIP LOCKED`), oldest first.
    fn pending(
        conn: &mut AsyncPgConnection,
        batch: i64,
    ) -> impl Future<Output = QueryResult<Vec<Pending>>> + Send;
}

/// The SET list of a stored embedding: the vector, and no failure left recorded.
macro_rules! success_set {
    () => {
        "embedding = $4::vector, embed_error = NULL, embed_retry_at = NULL"
    };
}
pub(crate) use success_set;

/// The SET list of a failure: the error, one more attempt, and the next try after
/// 1 minute × 2^(attempts before this one), at most a day later.
macro_rules! failure_set {
    () => {
        "embed_error = $4, embed_attempts = embed_attempts + 1, \
         embed_retry_at = now() + least(interval '1 day', \
             interval '1 minute' * power(2, least(embed_attempts, 20)))"
    };
}
pub(crate) use failure_set;

/// The condition a pending row meets: no embedding, and no retry time still to come.
macro_rules! due {
    () => {
        "embedding IS NULL AND (embed_retry_at IS NULL OR embed_retry_at <= now())"
    };
}
pub(crate) use due;

/// At most this many characters of a provider's error are kept.
const ERROR_MAX_CHARS: usize = 1000;

/// One pass over `T`: returns how many rows were embedded.
pub async fn run<T, F, Fut, E>(
    conn: &mut AsyncPgConnection,
    batch: i64,
    embed: F,
) -> QueryResult<usize>
where
    T: EmbedTarget,
    F: Fn(Vec<String>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<String>, E>> + Send,
    E: Display + Send,
{
    conn.transaction(async |conn| {
        let rows = T::pending(conn, batch).await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let texts = rows.iter().map(|r| r.text.clone()).collect();
        let failure = match embed(texts).await {
            Ok(vectors) if vectors.len() == rows.len() => {
                for (row, vector) in rows.iter().zip(&vectors) {
                    update(conn, T::STORE, row, vector).await?;
                }
                return Ok(rows.len());
            }
            Ok(vectors) => format!("{} vectors for {} texts", vectors.len(), rows.len()),
            Err(err) => err.to_string(),
        };
        if let [row] = rows.as_slice() {
            record_failure::<T>(conn, row, &failure).await?;
            return Ok(0);
        }
        let mut embedded = 0;
        for row in &rows {
            match embed(vec![row.text.clone()]).await {
                Ok(vectors) if vectors.len() == 1 => {
                    update(conn, T::STORE, row, &vectors[0]).await?;
                    embedded += 1;
                }
                Ok(vectors) => {
                    let error = format!("{} vectors for 1 text", vectors.len());
                    record_failure::<T>(conn, row, &error).await?;
                }
                Err(err) => record_failure::<T>(conn, row, &err.to_string()).await?,
            }
        }
        Ok(embedded)
    })
    .await
}

async fn record_failure<T: EmbedTarget>(
    conn: &mut AsyncPgConnection,
    row: &Pending,
    error: &str,
) -> QueryResult<()> {
    let error: String = error.chars().take(ERROR_MAX_CHARS).collect();
    tracing::warn!(id = %row.id, error, "embedding failed; the row is retried later");
    update(conn, T::RECORD_FAILURE, row, &error).await
}

async fn update(
    conn: &mut AsyncPgConnection,
    sql: &'static str,
    row: &Pending,
    value: &str,
) -> QueryResult<()> {
    diesel::sql_query(sql)
        .bind::<SqlUuid, _>(row.user_id)
        .bind::<Text, _>(&row.environment)
        .bind::<SqlUuid, _>(row.id)
        .bind::<Text, _>(value)
        .execute(conn)
        .await
        .map(drop)
}

/// Loads pending rows with `sql`, whose only parameter (`$1`) is the batch size.
pub async fn load_pending(
    conn: &mut AsyncPgConnection,
    sql: &str,
    batch: i64,
) -> QueryResult<Vec<Pending>> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        user_id: Uuid,
        #[diesel(sql_type = Text)]
        environment: String,
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
        #[diesel(sql_type = Text)]
        text: String,
    }
    let rows: Vec<Row> = diesel::sql_query(sql)
        .bind::<BigInt, _>(batch)
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| Pending {
            user_id: r.user_id,
            environment: r.environment,
            id: r.id,
            text: r.text,
        })
        .collect())
}
