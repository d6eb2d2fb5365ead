//! Confirmation tokens of destructive MCP tools (stored as SHA-256 hashes, spent once).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::mcp_confirmations as c;

pub struct NewConfirmation<'a> {
    pub token_hash: &'a [u8],
    pub project_id: Uuid,
    pub key_id: Uuid,
    pub tool: &'a str,
    pub arguments_hash: &'a [u8],
    pub expires_at: DateTime<Utc>,
}

pub async fn insert(conn: &mut AsyncPgConnection, new: NewConfirmation<'_>) -> QueryResult<()> {
    diesel::insert_into(c::table)
        .values((
            c::token_hash.eq(new.token_hash),
            c::project_id.eq(new.project_id),
            c::key_id.eq(new.key_id),
            c::tool.eq(new.tool),
            c::arguments_hash.eq(new.arguments_hash),
            c::expires_at.eq(new.expires_at),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Spends the token if it was issued to `key_id` for `tool` with these arguments, is unspent
/// and has not expired; `false` otherwise (nothing changes then).
pub async fn spend(
    conn: &mut AsyncPgConnection,
    token_hash: &[u8],
    key_id: Uuid,
    tool: &str,
    arguments_hash: &[u8],
) -> QueryResult<bool> {
    let spent = diesel::update(c::table)
        .filter(c::token_hash.eq(token_hash))
        .filter(c::key_id.eq(key_id))
        .filter(c::tool.eq(tool))
        .filter(c::arguments_hash.eq(arguments_hash))
        .filter(c::used_at.is_null())
        .filter(c::expires_at.gt(diesel::dsl::now))
        .set(c::used_at.eq(diesel::dsl::now))
        .execute(conn)
        .await?;
    Ok(spent == 1)
}

/// Deletes tokens that expired more than a day ago.
pub async fn purge_expired(conn: &mut AsyncPgConnection) -> QueryResult<Vec<(Uuid, i64)>> {
    let projects: Vec<Uuid> = diesel::delete(c::table)
        .filter(c::expires_at.lt(Utc::now() - chrono::Duration::days(1)))
        .returning(c::project_id)
        .get_results(conn)
        .await?;
    let mut per_project: std::collections::BTreeMap<Uuid, i64> = Default::default();
    for project in projects {
        *per_project.entry(project).or_default() += 1;
    }
    Ok(per_project.into_iter().collect())
}
