//! Per-project counters that plan limits are checked against.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

/// Counts one more contact unless the project already holds `limit` (`None`: unlimited).
/// Returns `false` at the limit. The row stays locked until the caller's transaction ends,
/// which makes the limit exact when contacts are created concurrently.
pub async fn add_contact(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    limit: Option<i64>,
) -> diesel::QueryResult<bool> {
    let changed = diesel::sql_query(
        "INSERT INTO project_usage (project_id, contacts) SELECT $1, 1 WHERE $2 >= 1 \
         ON CONFLICT (project_id) DO UPDATE SET contacts = project_usage.contacts + 1 \
         WHERE project_usage.contacts < $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<BigInt, _>(limit.unwrap_or(i64::MAX))
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// The contacts the project holds, its row locked until the caller's transaction ends: a
/// batch of new contacts is checked against the plan's limit and counted in the same
/// transaction ([`add_contacts`]), exact when contacts are created concurrently.
pub async fn lock_contacts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> diesel::QueryResult<i64> {
    #[derive(QueryableByName)]
    struct Held {
        #[diesel(sql_type = BigInt)]
        contacts: i64,
    }
    let held: Held = diesel::sql_query(
        "INSERT INTO project_usage (project_id, contacts) VALUES ($1, 0) \
         ON CONFLICT (project_id) DO UPDATE SET contacts = project_usage.contacts \
         RETURNING contacts",
    )
    .bind::<SqlUuid, _>(project_id)
    .get_result(conn)
    .await?;
    Ok(held.contacts)
}

/// Counts `n` contacts more, created in a batch checked against the limit
/// ([`lock_contacts`]).
pub async fn add_contacts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    n: i64,
) -> diesel::QueryResult<()> {
    diesel::sql_query(
        "INSERT INTO project_usage (project_id, contacts) VALUES ($1, $2) \
         ON CONFLICT (project_id) DO UPDATE SET contacts = project_usage.contacts + $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<BigInt, _>(n)
    .execute(conn)
    .await?;
    Ok(())
}

/// Counts `n` contacts fewer (deleted ones).
pub async fn remove_contacts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    n: i64,
) -> diesel::QueryResult<()> {
    diesel::sql_query(
        "UPDATE project_usage SET contacts = greatest(contacts - $2, 0) WHERE project_id = $1",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<BigInt, _>(n)
    .execute(conn)
    .await?;
    Ok(())
}
