//! The model the stored vectors were made with (table `embedding_model`): when the configured
//! embedder differs, every vector is cleared (the columns resized to its dimension) so that
//! the background pass re-embeds every row with it. Vectors of two models are never compared.

use diesel::QueryableByName;
use diesel::sql_types::{Integer, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use super::table::{DECISIONS, FREE_FORM, PRODUCT_STATES};

#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Integer)]
    dimensions: i32,
}

/// What [`reconcile`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Reconciled {
    /// The stored vectors are the configured model's.
    Same,
    /// They were another model's (`from`): cleared, to be re-embedded.
    Changed { from: String },
}

/// Makes the stored vectors the model `name`'s, of `dimensions` (0: unknown until the model
/// first answers; the columns keep theirs). One transaction, under a lock on the record, so
/// that instances starting together agree.
pub async fn reconcile(
    conn: &mut AsyncPgConnection,
    name: &str,
    dimensions: usize,
) -> diesel::QueryResult<Reconciled> {
    let name = name.to_owned();
    conn.transaction(async move |conn| {
        let stored: Option<Stored> =
            diesel::sql_query("SELECT name, dimensions FROM embedding_model FOR UPDATE")
                .get_result(conn)
                .await
                .map(Some)
                .or_else(|e| match e {
                    diesel::result::Error::NotFound => Ok(None),
                    e => Err(e),
                })?;
        let wanted = if dimensions == 0 {
            stored.as_ref().map_or(384, |s| s.dimensions)
        } else {
            i32::try_from(dimensions).unwrap_or(i32::MAX)
        };
        if let Some(s) = &stored
            && s.name == name
            && s.dimensions == wanted
        {
            return Ok(Reconciled::Same);
        }
        for table in [DECISIONS.name, PRODUCT_STATES.name, FREE_FORM.name] {
            diesel::sql_query(format!(
                "UPDATE {table} SET embedding = NULL, embed_error = NULL, embed_attempts = 0, \
                 embed_retry_at = NULL \
                 WHERE embedding IS NOT NULL OR embed_error IS NOT NULL"
            ))
            .execute(conn)
            .await?;
            if stored.as_ref().is_none_or(|s| s.dimensions != wanted) {
                diesel::sql_query(format!(
                    "ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({wanted})"
                ))
                .execute(conn)
                .await?;
            }
        }
        diesel::sql_query(
            "INSERT INTO embedding_model (id, name, dimensions) VALUES (true, $1, $2) \
             ON CONFLICT (id) DO UPDATE SET name = excluded.name, \
                 dimensions = excluded.dimensions, changed_at = now()",
        )
        .bind::<Text, _>(&name)
        .bind::<Integer, _>(wanted)
        .execute(conn)
        .await?;
        Ok(Reconciled::Changed {
            from: stored.map_or_else(String::new, |s| s.name),
        })
    })
    .await
}
