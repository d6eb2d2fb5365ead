//! Datasets (one per name per owner), their JSONB rows, the idempotency keys of row writes,
//! and staged uploads. Every write to a dataset holds its row lock (`FOR UPDATE`) for the
//! whole transaction, so writes to one dataset are serialized: schema widening, row counts,
//! idempotency keys and the append check are exact under concurrent requests.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Bool, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::owner::Owner;
use super::schema::{
    dataset_ingest_keys as k, dataset_rows as r, dataset_uploads as u, datasets as d,
};
use super::sql;
use crate::domain::datasets::KeyedRow;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = d)]
pub struct Dataset {
    pub id: Uuid,
    pub name: String,
    pub column_types: Value,
    pub row_count: i64,
    pub owning_worker_type: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = r)]
pub struct Row {
    pub id: Uuid,
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// How many rows a write added and replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    pub inserted: i32,
    pub updated: i32,
}

/// The owner's dataset `name`, created (empty) when absent, locked until the transaction ends.
pub async fn lock_or_create(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    name: &str,
) -> QueryResult<Dataset> {
    diesel::insert_into(d::table)
        .values((
            d::id.eq(Uuid::now_v7()),
            d::user_id.eq(owner.user_id),
            d::environment.eq(owner.environment),
            d::name.eq(name),
        ))
        .on_conflict((d::user_id, d::environment, d::name))
        .do_nothing()
        .execute(conn)
        .await?;
    d::table
        .filter(d::user_id.eq(owner.user_id))
        .filter(d::environment.eq(owner.environment))
        .filter(d::name.eq(name))
        .select(Dataset::as_select())
        .for_update()
        .first(conn)
        .await
}

/// The owner's dataset `name`.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    name: &str,
) -> QueryResult<Option<Dataset>> {
    d::table
        .filter(d::user_id.eq(owner.user_id))
        .filter(d::environment.eq(owner.environment))
        .filter(d::name.eq(name))
        .select(Dataset::as_select())
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` datasets of the owner after `after`, in id (creation) order.
pub async fn list(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Dataset>> {
    let mut query = d::table
        .filter(d::user_id.eq(owner.user_id))
        .filter(d::environment.eq(owner.environment))
        .order(d::id)
        .limit(limit)
        .select(Dataset::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(d::id.gt(after));
    }
    query.load(conn).await
}

/// Up to `limit` rows of the owner's dataset `dataset_id` after `after`, in id (first
/// write) order; an upsert keeps a row's place.
pub async fn rows_page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    dataset_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Row>> {
    let mut query = r::table
        .inner_join(d::table)
        .filter(d::user_id.eq(owner.user_id))
        .filter(d::environment.eq(owner.environment))
        .filter(r::dataset_id.eq(dataset_id))
        .order(r::id)
        .limit(limit)
        .select(Row::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(r::id.gt(after));
    }
    query.load(conn).await
}

/// The result recorded under an idempotency key of the (locked) dataset.
pub async fn ingest_key(
    conn: &mut AsyncPgConnection,
    dataset_id: Uuid,
    key: &str,
) -> QueryResult<Option<Written>> {
    k::table
        .filter(k::dataset_id.eq(dataset_id))
        .filter(k::idempotency_key.eq(key))
        .select((k::inserted, k::updated))
        .first::<(i32, i32)>(conn)
        .await
        .optional()
        .map(|found| found.map(|(inserted, updated)| Written { inserted, updated }))
}

pub async fn record_ingest_key(
    conn: &mut AsyncPgConnection,
    dataset_id: Uuid,
    key: &str,
    written: Written,
) -> QueryResult<()> {
    diesel::insert_into(k::table)
        .values((
            k::dataset_id.eq(dataset_id),
            k::idempotency_key.eq(key),
            k::inserted.eq(written.inserted),
            k::updated.eq(written.updated),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Which of `keys` the dataset already holds.
pub async fn existing_keys(
    conn: &mut AsyncPgConnection,
    dataset_id: Uuid,
    keys: &[&str],
) -> QueryResult<Vec<String>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    r::table
        .filter(r::dataset_id.eq(dataset_id))
        .filter(r::row_key.eq_any(keys))
        .select(r::row_key.assume_not_null())
        .load(conn)
        .await
}

#[derive(QueryableByName)]
struct WrittenRow {
    #[diesel(sql_type = Bool)]
    inserted: bool,
}

/// Writes `rows` (key, data) into the dataset in one statement: a keyed row replaces the
/// dataset's row of that key (its data, keeping its id and place), every other row is added.
/// The keys must be distinct.
pub async fn write_rows(
    conn: &mut AsyncPgConnection,
    dataset_id: Uuid,
    rows: Vec<KeyedRow>,
) -> QueryResult<Written> {
    if rows.is_empty() {
        return Ok(Written::default());
    }
    let mut ids = Vec::with_capacity(rows.len());
    let mut keys = Vec::with_capacity(rows.len());
    let mut data = Vec::with_capacity(rows.len());
    for (key, row) in rows {
        ids.push(Uuid::now_v7());
        keys.push(key);
        data.push(Value::Object(row));
    }
    let written: Vec<WrittenRow> = diesel::sql_query(sql::datasets::WRITE_ROWS)
        .bind::<SqlUuid, _>(dataset_id)
        .bind::<Array<SqlUuid>, _>(ids)
        .bind::<Array<Nullable<Text>>, _>(keys)
        .bind::<Array<Jsonb>, _>(data)
        .load(conn)
        .await?;
    let inserted = written.iter().filter(|w| w.inserted).count();
    Ok(Written {
        inserted: i32::try_from(inserted).unwrap_or(i32::MAX),
        updated: i32::try_from(written.len() - inserted).unwrap_or(i32::MAX),
    })
}

/// Records what a write did to the (locked) dataset: its widened columns, its row count, and
/// the worker type when one was given.
pub async fn update_after_write(
    conn: &mut AsyncPgConnection,
    dataset_id: Uuid,
    columns: &Value,
    inserted: i32,
    owning_worker_type: Option<&str>,
) -> QueryResult<()> {
    diesel::update(d::table.find(dataset_id))
        .set((
            d::column_types.eq(columns),
            d::row_count.eq(d::row_count + i64::from(inserted)),
            d::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await?;
    if let Some(worker) = owning_worker_type {
        diesel::update(d::table.find(dataset_id))
            .set(d::owning_worker_type.eq(worker))
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// How long an upload waits for its confirm.
pub const UPLOAD_HOURS: i64 = 24;
/// How many unconfirmed uploads an owner may have waiting at once.
pub const PENDING_UPLOADS_MAX: i64 = 10;
/// How long idempotency keys of row writes are kept (ruled: at least 24 hours).
pub const INGEST_KEY_DAYS: i64 = 7;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = u)]
pub struct Upload {
    pub id: Uuid,
    pub dataset_name: String,
    pub format: String,
    pub content: Vec<u8>,
    pub row_count: i32,
    pub column_types: Value,
    pub expires_at: DateTime<Utc>,
    pub confirmed_at: Option<DateTime<Utc>>,
    pub dataset_id: Option<Uuid>,
    pub inserted: Option<i32>,
    pub updated: Option<i32>,
}

pub struct NewUpload<'a> {
    pub dataset_name: &'a str,
    pub format: &'a str,
    pub content: &'a [u8],
    pub row_count: i32,
    pub columns: &'a Value,
}

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("at most {PENDING_UPLOADS_MAX} uploads may wait at once")]
    TooManyPending,
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Stages an upload, unless the owner already has [`PENDING_UPLOADS_MAX`] unexpired ones
/// waiting for their confirm (counted and inserted under a per-owner lock). Answers its id and
/// expiry.
pub async fn stage_upload(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    upload: NewUpload<'_>,
) -> Result<(Uuid, DateTime<Utc>), StageError> {
    conn.transaction(async |conn| {
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind::<Text, _>(format!(
                "dataset-upload:{}:{}",
                owner.user_id, owner.environment
            ))
            .execute(conn)
            .await?;
        let now = Utc::now();
        let pending: i64 = u::table
            .filter(u::user_id.eq(owner.user_id))
            .filter(u::environment.eq(owner.environment))
            .filter(u::confirmed_at.is_null())
            .filter(u::expires_at.gt(now))
            .count()
            .get_result(conn)
            .await?;
        if pending >= PENDING_UPLOADS_MAX {
            return Err(StageError::TooManyPending);
        }
        let id = Uuid::now_v7();
        let expires_at = now + chrono::Duration::hours(UPLOAD_HOURS);
        diesel::insert_into(u::table)
            .values((
                u::id.eq(id),
                u::user_id.eq(owner.user_id),
                u::environment.eq(owner.environment),
                u::dataset_name.eq(upload.dataset_name),
                u::format.eq(upload.format),
                u::content.eq(upload.content),
                u::row_count.eq(upload.row_count),
                u::column_types.eq(upload.columns),
                u::expires_at.eq(expires_at),
            ))
            .execute(conn)
            .await?;
        Ok((id, expires_at))
    })
    .await
}

/// The owner's unexpired upload `id`, locked until the transaction ends (two confirms at
/// once: the second waits, then sees it confirmed).
pub async fn lock_upload(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<Upload>> {
    u::table
        .filter(u::id.eq(id))
        .filter(u::user_id.eq(owner.user_id))
        .filter(u::environment.eq(owner.environment))
        .filter(u::expires_at.gt(diesel::dsl::now))
        .select(Upload::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Records a confirm; the file is not kept once confirmed.
pub async fn mark_confirmed(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    dataset_id: Uuid,
    written: Written,
) -> QueryResult<()> {
    diesel::update(u::table.find(id))
        .set((
            u::confirmed_at.eq(diesel::dsl::now),
            u::dataset_id.eq(dataset_id),
            u::inserted.eq(written.inserted),
            u::updated.eq(written.updated),
            u::content.eq(Vec::<u8>::new()),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Deletes expired uploads (confirmed or not) and idempotency keys older than
/// [`INGEST_KEY_DAYS`], of every owner; answers how many of each.
pub async fn purge_expired(conn: &mut AsyncPgConnection) -> QueryResult<(usize, usize)> {
    let uploads = diesel::delete(u::table.filter(u::expires_at.le(diesel::dsl::now)))
        .execute(conn)
        .await?;
    let keys = diesel::delete(
        k::table.filter(k::created_at.le(Utc::now() - chrono::Duration::days(INGEST_KEY_DAYS))),
    )
    .execute(conn)
    .await?;
    Ok((uploads, keys))
}
