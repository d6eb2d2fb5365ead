//! The model the stored vectors were made with (table `embedding_model`): when the configured
//! embedder differs, every vector is taken out of `embedding` (the columns resized to the new
//! dimension) so that the background pass re-embeds every row with it. When the old model is
//! the configured previous one, each row's vector moves to `embedding_previous`, where search
//! keeps using it until the row's new vector is written (see [`super::previous`]); otherwise
//! it is discarded. Vectors of two models are never compared.

use diesel::QueryableByName;
use diesel::sql_types::{Integer, Nullable, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use super::table::{DECISIONS, FREE_FORM, PRODUCT_STATES};

#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Integer)]
    dimensions: i32,
    #[diesel(sql_type = Nullable<Text>)]
    previous_name: Option<String>,
}

/// What [`reconcile`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Reconciled {
    /// The stored vectors are the configured model's.
    Same,
    /// They were another model's (`from`): taken out of `embedding`, to be re-embedded; `kept`
    /// when the previous model's vectors stay searchable in `embedding_previous` meanwhile.
    Changed { from: String, kept: bool },
}

/// What becomes of the rows' `embedding_previous` on a model change.
enum Previous {
    /// The old model is the configured previous one: its vectors move there.
    Move,
    /// The recorded previous model is still the configured one (an upgrade changed its mind
    /// half-way): its vectors stay.
    Keep,
    /// No configured previous model matches: cleared.
    Clear,
}

impl Previous {
    /// The value `embedding_previous` takes.
    fn sql(&self) -> &'static str {
        match self {
            Previous::Move => "embedding",
            Previous::Keep => "embedding_previous",
            Previous::Clear => "NULL",
        }
    }
}

/// Makes the stored vectors the model `name`'s, of `dimensions` (0: unknown until the model
/// first answers; the columns keep theirs). `previous` names the configured previous model (as
/// its vectors are recorded): the vectors of that model are kept for search until re-embedded.
/// One transaction, under a lock on the record, so that instances starting together agree.
pub async fn reconcile(
    conn: &mut AsyncPgConnection,
    name: &str,
    dimensions: usize,
    previous: Option<&str>,
) -> diesel::QueryResult<Reconciled> {
    let name = name.to_owned();
    let previous = previous.map(str::to_owned);
    conn.transaction(async move |conn| {
        let stored: Option<Stored> = diesel::sql_query(
            "SELECT name, dimensions, previous_name FROM embedding_model FOR UPDATE",
        )
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
        let (fate, previous_name) = match (&stored, previous) {
            (Some(s), Some(p)) if s.name == p => (Previous::Move, Some(p)),
            (Some(s), Some(p)) if s.previous_name.as_deref() == Some(p.as_str()) => {
                (Previous::Keep, Some(p))
            }
            _ => (Previous::Clear, None),
        };
        let resized = stored.as_ref().is_none_or(|s| s.dimensions != wanted);
        for table in [&DECISIONS, &PRODUCT_STATES, &FREE_FORM] {
            let table_name = table.name;
            diesel::sql_query(format!(
                "UPDATE {table_name} SET embedding_previous = {}, embedding = NULL, \
                     embed_error = NULL, embed_attempts = 0, embed_retry_at = NULL \
                 WHERE embedding IS NOT NULL OR embedding_previous IS NOT NULL \
                    OR embed_error IS NOT NULL",
                fate.sql()
            ))
            .execute(conn)
            .await?;
            if resized {
                // A new type brings the type's storage (out of line); keep vectors in their
                // rows (see the migration `vectors_inline_any_dimension`). The vector index's
                // expression names the dimension: it is built again, over no vector yet.
                let dimensions = usize::try_from(wanted).unwrap_or(0);
                let statements = table
                    .drop_vector_index()
                    .into_iter()
                    .chain([
                        format!(
                            "ALTER TABLE {table_name} ALTER COLUMN embedding TYPE vector({wanted})"
                        ),
                        format!("ALTER TABLE {table_name} ALTER COLUMN embedding SET STORAGE MAIN"),
                    ])
                    .chain(table.create_vector_index(dimensions));
                for statement in statements {
                    diesel::sql_query(statement).execute(conn).await?;
                }
            }
        }
        diesel::sql_query(
            "INSERT INTO embedding_model (id, name, dimensions, previous_name) \
             VALUES (true, $1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET name = excluded.name, \
                 dimensions = excluded.dimensions, previous_name = excluded.previous_name, \
                 changed_at = now()",
        )
        .bind::<Text, _>(&name)
        .bind::<Integer, _>(wanted)
        .bind::<Nullable<Text>, _>(previous_name.clone())
        .execute(conn)
        .await?;
        Ok(Reconciled::Changed {
            from: stored.map_or_else(String::new, |s| s.name),
            kept: previous_name.is_some(),
        })
    })
    .await
}
