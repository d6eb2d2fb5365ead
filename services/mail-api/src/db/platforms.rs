//! Connections to other email platforms (`platform_connections`), their credential sealed
//! (AES-256-GCM under the key-encryption key, bound to the project and the connection).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use secrets::Kek;
use uuid::Uuid;

use super::schema::platform_connections as pc;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = pc)]
pub struct Connection {
    pub id: Uuid,
    pub project_id: Uuid,
    pub platform: String,
    pub account: Option<String>,
    pub credentials_sealed: Vec<u8>,
    pub created_at: DateTime<Utc>,
}

fn context(project_id: Uuid, id: Uuid) -> Vec<u8> {
    format!("mail/project/{project_id}/platform-connection/{id}").into_bytes()
}

pub fn seal_credential(kek: &Kek, project_id: Uuid, id: Uuid, credential: &str) -> Vec<u8> {
    kek.seal(credential.as_bytes(), &context(project_id, id))
}

pub fn open_credential(
    kek: &Kek,
    project_id: Uuid,
    id: Uuid,
    sealed: &[u8],
) -> anyhow::Result<String> {
    Ok(kek.open_text(sealed, &context(project_id, id))?)
}

pub async fn insert(conn: &mut AsyncPgConnection, row: &Connection) -> QueryResult<()> {
    diesel::insert_into(pc::table)
        .values(row)
        .execute(conn)
        .await
        .map(|_| ())
}

/// The project's connection `id`.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Connection>> {
    pc::table
        .filter(pc::project_id.eq(project_id))
        .filter(pc::id.eq(id))
        .select(Connection::as_select())
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` connections of the project after `after` (id order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Connection>> {
    let mut query = pc::table
        .filter(pc::project_id.eq(project_id))
        .order(pc::id)
        .limit(limit)
        .select(Connection::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(pc::id.gt(after));
    }
    query.load(conn).await
}

/// Deletes the project's connection `id` (its sealed credential with it); `false` when it has
/// none.
pub async fn delete(conn: &mut AsyncPgConnection, project_id: Uuid, id: Uuid) -> QueryResult<bool> {
    let deleted = diesel::delete(pc::table)
        .filter(pc::project_id.eq(project_id))
        .filter(pc::id.eq(id))
        .execute(conn)
        .await?;
    Ok(deleted == 1)
}
