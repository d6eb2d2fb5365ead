//! Credentials supplied by the user (BYOK), one per service of an owner, stored sealed.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::owner::Owner;
use super::schema::byok_credentials as b;

/// A credential as it is shown: never the key.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = b)]
pub struct Credential {
    pub id: Uuid,
    pub service: String,
    pub label: String,
    pub key_hint: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

pub struct NewCredential<'a> {
    pub id: Uuid,
    pub service: &'a str,
    pub label: &'a str,
    /// Sealed (see `domain::byok`), bound to `id`.
    pub sealed_key: &'a [u8],
    pub key_hint: &'a str,
}

/// Stores a credential; `None` when the owner already has one for that service.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    new: NewCredential<'_>,
) -> QueryResult<Option<Credential>> {
    diesel::insert_into(b::table)
        .values((
            b::id.eq(new.id),
            b::user_id.eq(owner.user_id),
            b::environment.eq(owner.environment),
            b::service.eq(new.service),
            b::label.eq(new.label),
            b::sealed_key.eq(new.sealed_key),
            b::key_hint.eq(new.key_hint),
        ))
        .on_conflict((b::user_id, b::environment, b::service))
        .do_nothing()
        .returning(Credential::as_returning())
        .get_result(conn)
        .await
        .optional()
}

/// Up to `limit` credentials after `after` (id order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Credential>> {
    let mut query = b::table
        .filter(b::user_id.eq(owner.user_id))
        .filter(b::environment.eq(owner.environment))
        .order(b::id)
        .limit(limit)
        .select(Credential::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(b::id.gt(after));
    }
    query.load(conn).await
}

/// Deletes an owned credential; `false` when the owner has no such credential.
pub async fn delete(conn: &mut AsyncPgConnection, owner: Owner<'_>, id: Uuid) -> QueryResult<bool> {
    let deleted = diesel::delete(
        b::table
            .filter(b::id.eq(id))
            .filter(b::user_id.eq(owner.user_id))
            .filter(b::environment.eq(owner.environment)),
    )
    .execute(conn)
    .await?;
    Ok(deleted == 1)
}

/// The owner's credential for `service`, taken for a call: its `last_used_at` becomes now,
/// and its id and sealed key are returned (one statement).
pub async fn take_for_use(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    service: &str,
) -> QueryResult<Option<(Uuid, Vec<u8>)>> {
    diesel::update(
        b::table
            .filter(b::user_id.eq(owner.user_id))
            .filter(b::environment.eq(owner.environment))
            .filter(b::service.eq(service)),
    )
    .set(b::last_used_at.eq(diesel::dsl::now))
    .returning((b::id, b::sealed_key))
    .get_result(conn)
    .await
    .optional()
}
