//! The previous model's vectors kept while rows are re-embedded (`embedding_previous`, and
//! `embedding_model.previous_name`): how many rows still have only those, and the end of the
//! re-embedding once none do.

use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::{OptionalExtension as _, QueryableByName};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use super::table::{DECISIONS, FREE_FORM, PRODUCT_STATES};

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Nullable<Text>)]
    previous_name: Option<String>,
}

/// The rows (of every owner) still searched with the previous model's vector: their new one is
/// not written yet. Of product states, only the current versions count (the only ones the
/// background pass embeds).
pub async fn remaining(conn: &mut AsyncPgConnection) -> diesel::QueryResult<i64> {
    let (decisions, states, entries) = (DECISIONS.name, PRODUCT_STATES.name, FREE_FORM.name);
    let count: Count = diesel::sql_query(format!(
        "SELECT (SELECT count(*) FROM {decisions} WHERE embedding_previous IS NOT NULL) \
              + (SELECT count(*) FROM {states} s WHERE s.embedding_previous IS NOT NULL \
                   AND s.version = (SELECT max(version) FROM {states} \
                                    WHERE product_id = s.product_id)) \
              + (SELECT count(*) FROM {entries} WHERE embedding_previous IS NOT NULL) AS n"
    ))
    .get_result(conn)
    .await?;
    Ok(count.n)
}

/// The model whose vectors `embedding_previous` holds (as its vectors are recorded), if any.
pub async fn previous_name(conn: &mut AsyncPgConnection) -> diesel::QueryResult<Option<String>> {
    let name: Option<Name> = diesel::sql_query("SELECT previous_name FROM embedding_model")
        .get_result(conn)
        .await
        .optional()?;
    Ok(name.and_then(|n| n.previous_name))
}

/// Ends the re-embedding when no row remains ([`remaining`]): the previous vectors left on
/// product states that are no longer current are dropped and `previous_name` is cleared.
/// Returns whether it is over (also when there was none). Under the record's lock, as
/// [`super::reconcile`] takes it.
pub async fn finish_if_done(conn: &mut AsyncPgConnection) -> diesel::QueryResult<bool> {
    conn.transaction(async |conn| {
        diesel::sql_query("SELECT 1 FROM embedding_model FOR UPDATE")
            .execute(conn)
            .await?;
        if remaining(conn).await? > 0 {
            return Ok(false);
        }
        for table in [DECISIONS.name, PRODUCT_STATES.name, FREE_FORM.name] {
            diesel::sql_query(format!(
                "UPDATE {table} SET embedding_previous = NULL \
                 WHERE embedding_previous IS NOT NULL"
            ))
            .execute(conn)
            .await?;
        }
        diesel::sql_query(
            "UPDATE embedding_model SET previous_name = NULL WHERE previous_name IS NOT NULL",
        )
        .execute(conn)
        .await?;
        Ok(true)
    })
    .await
}
