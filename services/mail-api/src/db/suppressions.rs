//! Suppressed addresses: never sent to.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::suppressions;

pub const REASONS: &[&str] = &["manual", "bounced", "complained", "unsubscribed"];

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = suppressions)]
pub struct Suppression {
    pub id: Uuid,
    pub email: String,
    pub reason: String,
    pub note: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Adds the address; `(suppression, false)` when it was already suppressed (left unchanged).
pub async fn add(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
    reason: &str,
    note: Option<&str>,
) -> QueryResult<(Suppression, bool)> {
    let inserted = diesel::insert_into(suppressions::table)
        .values((
            suppressions::id.eq(Uuid::now_v7()),
            suppressions::project_id.eq(project_id),
            suppressions::email.eq(email),
            suppressions::reason.eq(reason),
            suppressions::note.eq(note),
        ))
        .on_conflict((suppressions::project_id, suppressions::email))
        .do_nothing()
        .returning(Suppression::as_returning())
        .get_result(conn)
        .await
        .optional()?;
    if let Some(row) = inserted {
        return Ok((row, true));
    }
    let existing = suppressions::table
        .filter(suppressions::project_id.eq(project_id))
        .filter(suppressions::email.eq(email))
        .select(Suppression::as_select())
        .first(conn)
        .await?;
    Ok((existing, false))
}

/// Removes the address; `false` when the project had not suppressed it.
pub async fn remove(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
) -> QueryResult<bool> {
    let deleted = diesel::delete(
        suppressions::table
            .filter(suppressions::project_id.eq(project_id))
            .filter(suppressions::email.eq(email)),
    )
    .execute(conn)
    .await?;
    Ok(deleted == 1)
}

pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Suppression>> {
    let mut query = suppressions::table
        .filter(suppressions::project_id.eq(project_id))
        .order(suppressions::id)
        .limit(limit)
        .select(Suppression::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(suppressions::id.gt(after));
    }
    query.load(conn).await
}
