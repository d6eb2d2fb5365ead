//! One event for one subscription (`webhook_deliveries`): made by the fan-out trigger in the
//! transaction that wrote the event, published by the relay, sent by the deliverer. Its id is
//! the `webhook-id` of every attempt.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Bytea, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use store::Prepared;
use uuid::Uuid;

use super::schema::webhook_deliveries;
use super::sql;

pub const STATUSES: &[&str] = &["pending", "delivered", "dead"];

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhook_deliveries)]
pub struct Delivery {
    pub id: Uuid,
    pub subscription_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub status: String,
    pub attempts: i32,
    pub last_status_code: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// Which deliveries a list shows.
#[derive(Debug, Default)]
pub struct Filter<'a> {
    pub status: Option<&'a str>,
    pub subscription_id: Option<Uuid>,
}

pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &Filter<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Delivery>> {
    let mut query = webhook_deliveries::table
        .filter(webhook_deliveries::project_id.eq(project_id))
        .order(webhook_deliveries::id)
        .limit(limit)
        .select(Delivery::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(webhook_deliveries::id.gt(after));
    }
    if let Some(status) = filter.status {
        query = query.filter(webhook_deliveries::status.eq(status.to_owned()));
    }
    if let Some(subscription) = filter.subscription_id {
        query = query.filter(webhook_deliveries::subscription_id.eq(subscription));
    }
    query.load(conn).await
}

/// Sends a delivery again from its first attempt (whatever its state but `pending`): the
/// relay publishes it. `None` when the project has no such delivery; `Some(None)` when it is
/// pending already.
pub async fn replay(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    subscription: Option<Uuid>,
) -> QueryResult<Option<Option<Delivery>>> {
    let Some(current) = webhook_deliveries::table
        .filter(webhook_deliveries::project_id.eq(project_id))
        .filter(webhook_deliveries::id.eq(id))
        .select(Delivery::as_select())
        .first(conn)
        .await
        .optional()?
        .filter(|d| subscription.is_none_or(|s| s == d.subscription_id))
    else {
        return Ok(None);
    };
    if current.status == "pending" {
        return Ok(Some(None));
    }
    let replayed = diesel::update(
        webhook_deliveries::table
            .filter(webhook_deliveries::project_id.eq(project_id))
            .filter(webhook_deliveries::id.eq(id))
            .filter(webhook_deliveries::status.ne("pending")),
    )
    .set((
        webhook_deliveries::status.eq("pending"),
        webhook_deliveries::attempts.eq(0),
        webhook_deliveries::published_at.eq(None::<DateTime<Utc>>),
        webhook_deliveries::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Delivery::as_returning())
    .get_result(conn)
    .await
    .optional()?;
    Ok(Some(replayed))
}

/// Deliveries not handed to the broker yet, locked for the caller's transaction (rows another
/// relay holds are skipped): `(id, project_id)`.
pub async fn claim_unpublished(
    conn: &mut AsyncPgConnection,
    limit: i64,
) -> QueryResult<Vec<(Uuid, Uuid)>> {
    webhook_deliveries::table
        .filter(webhook_deliveries::published_at.is_null())
        .filter(webhook_deliveries::status.eq("pending"))
        .order(webhook_deliveries::created_at)
        .limit(limit)
        .for_update()
        .skip_locked()
        .select((webhook_deliveries::id, webhook_deliveries::project_id))
        .load(conn)
        .await
}

pub async fn mark_published(conn: &mut AsyncPgConnection, ids: &[Uuid]) -> QueryResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    Prepared(
        diesel::sql_query("UPDATE webhook_deliveries SET published_at = now() WHERE id = ANY($1)")
            .bind::<Array<SqlUuid>, _>(ids),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// What the deliverer needs of one delivery.
#[derive(Debug, QueryableByName)]
pub struct Job {
    #[diesel(sql_type = SqlUuid)]
    pub subscription_id: Uuid,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Int4)]
    pub attempts: i32,
    #[diesel(sql_type = Text)]
    pub url: String,
    #[diesel(sql_type = Bytea)]
    pub secret_sealed: Vec<u8>,
    /// The secret before the last rotation, while it is valid.
    #[diesel(sql_type = Nullable<Bytea>)]
    pub previous_secret_sealed: Option<Vec<u8>>,
    #[diesel(sql_type = Text)]
    pub event_type: String,
    #[diesel(sql_type = Jsonb)]
    pub data: Value,
    #[diesel(sql_type = Timestamptz)]
    pub event_created_at: DateTime<Utc>,
}

pub async fn job(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Job>> {
    Prepared(
        diesel::sql_query(sql::webhook_deliveries::JOB)
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(id),
    )
    .get_result(conn)
    .await
    .optional()
}

/// How an attempt of a pending delivery ended.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub project_id: Uuid,
    pub id: Uuid,
    pub delivered: bool,
    /// The attempts are used up (and this one failed).
    pub dead: bool,
    pub status_code: Option<i32>,
    pub error: Option<String>,
}

impl Attempt {
    /// The delivery's status once the attempt is recorded.
    fn status(&self) -> &'static str {
        if self.delivered {
            "delivered"
        } else if self.dead {
            "dead"
        } else {
            "pending"
        }
    }
}

/// Records an attempt of a pending delivery (a delivery no longer pending is left alone).
pub async fn record(conn: &mut AsyncPgConnection, attempt: &Attempt) -> QueryResult<()> {
    record_many(conn, std::slice::from_ref(attempt)).await
}

/// [`record`] for the attempts of many deliveries in one statement (one commit). A delivery
/// listed twice (only a duplicate message makes two attempts end together) counts one of
/// them. Only such a duplicate puts a row in two concurrent batches; should they deadlock,
/// PostgreSQL aborts one and its caller records its attempts one by one.
pub async fn record_many(conn: &mut AsyncPgConnection, attempts: &[Attempt]) -> QueryResult<()> {
    let mut sorted: Vec<&Attempt> = attempts.iter().collect();
    sorted.sort_by_key(|a| a.id);
    Prepared(
        diesel::sql_query(
            "UPDATE webhook_deliveries d SET attempts = d.attempts + 1, status = a.status, \
               last_status_code = a.status_code, last_error = a.error, updated_at = now(), \
               delivered_at = CASE WHEN a.status = 'delivered' THEN now() END \
             FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int4[], $5::text[]) \
               AS a(project_id, id, status, status_code, error) \
             WHERE d.id = ANY($2) AND d.project_id = a.project_id AND d.id = a.id \
               AND d.status = 'pending'",
        )
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|a| a.project_id).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|a| a.id).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(sorted.iter().map(|a| a.status()).collect::<Vec<_>>())
        .bind::<Array<Nullable<Int4>>, _>(sorted.iter().map(|a| a.status_code).collect::<Vec<_>>())
        .bind::<Array<Nullable<Text>>, _>(
            sorted
                .iter()
                .map(|a| a.error.as_deref())
                .collect::<Vec<_>>(),
        ),
    )
    .execute(conn)
    .await?;
    Ok(())
}
