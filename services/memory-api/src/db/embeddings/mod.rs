//! Embeddings of the memory tables, each query written once for every table: storing a
//! row's vector, the background pass over rows still without one, the previous model's
//! vectors kept while rows are re-embedded, and keyword and semantic search. Every query is
//! scoped to one owner, except the pass and the re-embedding's count, which see every owner's
//! rows (the pass writes each back under its own owner).

mod model;
mod pass;
mod previous;
mod search;
mod table;

use diesel::QueryResult;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

pub use model::{Reconciled, reconcile};
pub use pass::embed_pending;
pub use previous::{finish_if_done, previous_name, remaining};
pub use search::{PreviousQuery, query_vector, search_keyword, search_semantic};
pub use table::{DECISIONS, FREE_FORM, PRODUCT_STATES, Searchable, Shape, Table};

use super::owner::Owner;
use table::SUCCESS_SET;

/// Stores the embedding (`vector`, a pgvector literal) of the owner's row `id` of `table`.
pub async fn set_embedding(
    conn: &mut AsyncPgConnection,
    table: &Table,
    owner: Owner<'_>,
    id: Uuid,
    vector: &str,
) -> QueryResult<()> {
    update_one(conn, &table.update_one(SUCCESS_SET), owner, id, vector).await
}

/// Runs `sql`, an UPDATE of [`Table::update_one`], with `value` as `$4`.
async fn update_one(
    conn: &mut AsyncPgConnection,
    sql: &str,
    owner: Owner<'_>,
    id: Uuid,
    value: &str,
) -> QueryResult<()> {
    diesel::sql_query(sql)
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(value)
        .execute(conn)
        .await
        .map(drop)
}
