//! Idempotency records: the first answer to a keyed request, kept at least 24 hours.

use diesel::prelude::*;
use diesel::sql_types::{Bytea, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::idempotency_keys;
use super::sql;

/// Where a key is used: the project, the route and the key itself.
#[derive(Debug, Clone, Copy)]
pub struct KeyRef<'a> {
    pub project_id: Uuid,
    pub route: &'a str,
    pub key: &'a str,
}

/// What an earlier request with the same key left.
#[derive(Debug)]
pub struct Recorded {
    pub request_hash: Vec<u8>,
    pub status: Option<i16>,
    pub body: Option<Value>,
}

/// Claims the key for this request: `None` when claimed (new, or its record was older than 24
/// hours), else the earlier record. A concurrent claim of the same key waits until the
/// claiming transaction ends and then sees its record.
pub async fn claim(
    conn: &mut AsyncPgConnection,
    key: KeyRef<'_>,
    request_hash: &[u8],
) -> QueryResult<Option<Recorded>> {
    let claimed = diesel::sql_query(sql::idempotency::CLAIM)
        .bind::<SqlUuid, _>(key.project_id)
        .bind::<Text, _>(key.route)
        .bind::<Text, _>(key.key)
        .bind::<Bytea, _>(request_hash)
        .execute(conn)
        .await?;
    if claimed == 1 {
        return Ok(None);
    }
    let (request_hash, status, body) = idempotency_keys::table
        .find((key.project_id, key.route, key.key))
        .select((
            idempotency_keys::request_hash,
            idempotency_keys::response_status,
            idempotency_keys::response_body,
        ))
        .first(conn)
        .await?;
    Ok(Some(Recorded {
        request_hash,
        status,
        body,
    }))
}

/// Stores the answer of a claimed key (in the claiming transaction).
pub async fn record(
    conn: &mut AsyncPgConnection,
    key: KeyRef<'_>,
    status: i16,
    body: &Value,
) -> QueryResult<()> {
    diesel::update(idempotency_keys::table.find((key.project_id, key.route, key.key)))
        .set((
            idempotency_keys::response_status.eq(Some(status)),
            idempotency_keys::response_body.eq(Some(body)),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// Most records one purge statement deletes, so a large backlog never holds a long lock.
const PURGE_BATCH: i64 = 10_000;

/// Deletes the records older than 24 hours (a claim already treats them as free); returns how
/// many.
pub async fn purge_expired(conn: &mut AsyncPgConnection) -> QueryResult<usize> {
    let per_project = purge_expired_by_project(conn).await?;
    Ok(per_project.iter().map(|(_, n)| *n as usize).sum())
}

#[derive(QueryableByName)]
struct Purged {
    #[diesel(sql_type = SqlUuid)]
    project_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// [`purge_expired`], counted per project (each project once).
pub async fn purge_expired_by_project(
    conn: &mut AsyncPgConnection,
) -> QueryResult<Vec<(Uuid, i64)>> {
    let mut purged: std::collections::BTreeMap<Uuid, i64> = Default::default();
    loop {
        let rows: Vec<Purged> = diesel::sql_query(sql::idempotency::PURGE_EXPIRED_BY_PROJECT)
            .bind::<diesel::sql_types::BigInt, _>(PURGE_BATCH)
            .load(conn)
            .await?;
        let deleted: i64 = rows.iter().map(|r| r.n).sum();
        for row in rows {
            *purged.entry(row.project_id).or_default() += row.n;
        }
        if deleted < PURGE_BATCH {
            return Ok(purged.into_iter().collect());
        }
    }
}
