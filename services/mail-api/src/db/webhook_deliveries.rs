//! One event for one subscription (`webhook_deliveries`): made by the fan-out trigger in the
//! transaction that wrote the event, published by the relay, sent by the deliverer. Its id is
//! the `webhook-id` of every attempt.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Bytea, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
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
    diesel::sql_query("UPDATE webhook_deliveries SET published_at = now() WHERE id = ANY($1)")
        .bind::<Array<SqlUuid>, _>(ids)
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
    diesel::sql_query(sql::webhook_deliveries::JOB)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(id)
        .get_result(conn)
        .await
        .optional()
}

/// How an attempt ended.
pub struct Attempt<'a> {
    pub delivered: bool,
    /// The attempts are used up (and this one failed).
    pub dead: bool,
    pub status_code: Option<i32>,
    pub error: Option<&'a str>,
}

/// Records an attempt of a pending delivery (a delivery no longer pending is left alone).
pub async fn record(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    attempt: &Attempt<'_>,
) -> QueryResult<()> {
    let status = if attempt.delivered {
        "delivered"
    } else if attempt.dead {
        "dead"
    } else {
        "pending"
    };
    diesel::sql_query(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, status = $3, \
           last_status_code = $4, last_error = $5, updated_at = now(), \
           delivered_at = CASE WHEN $3 = 'delivered' THEN now() END \
         WHERE project_id = $1 AND id = $2 AND status = 'pending'",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(status)
    .bind::<Nullable<Int4>, _>(attempt.status_code)
    .bind::<Nullable<Text>, _>(attempt.error)
    .execute(conn)
    .await?;
    Ok(())
}
