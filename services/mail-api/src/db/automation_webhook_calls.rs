//! The webhook calls of automations' webhook steps: recorded with the step, delivered after the
//! commit, retried under a lease (`FOR UPDATE SKIP LOCKED`) until delivered or dead.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

/// Records a webhook step's request, due at `now`: delivered after the commit.
#[allow(clippy::too_many_arguments)]
pub async fn insert_webhook_call(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    automation_id: Uuid,
    enrollment_id: Uuid,
    step_index: i32,
    url: &str,
    body: &Value,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::sql_query(
        "INSERT INTO automation_webhook_calls (id, project_id, automation_id, enrollment_id, \
           step_index, url, body, next_attempt_at, created_at) \
         VALUES (uuid_v7(), $1, $2, $3, $4, $5, $6, $7, $7) \
         ON CONFLICT (enrollment_id, step_index) DO NOTHING",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(automation_id)
    .bind::<SqlUuid, _>(enrollment_id)
    .bind::<Integer, _>(step_index)
    .bind::<Text, _>(url)
    .bind::<Jsonb, _>(body)
    .bind::<Timestamptz, _>(now)
    .execute(conn)
    .await
    .map(drop)
}

/// A webhook call taken for an attempt.
#[derive(Debug, QueryableByName)]
pub struct WebhookCall {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub automation_id: Uuid,
    #[diesel(sql_type = Text)]
    pub url: String,
    #[diesel(sql_type = Jsonb)]
    pub body: Value,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = diesel::sql_types::Bytea)]
    pub secret_sealed: Vec<u8>,
}

/// Takes up to `limit` due webhook calls for an attempt each (counted now) and moves them
/// `lease_secs` ahead, in a statement of its own: a replica that dies mid-attempt leaves the
/// call to be tried again once the lease ends.
pub async fn claim_webhook_calls(
    conn: &mut AsyncPgConnection,
    now: DateTime<Utc>,
    lease_secs: f64,
    limit: i64,
) -> QueryResult<Vec<WebhookCall>> {
    diesel::sql_query(
        "WITH picked AS ( \
           SELECT id FROM automation_webhook_calls \
           WHERE status = 'pending' AND next_attempt_at <= $1 \
           ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED), \
         claimed AS ( \
           UPDATE automation_webhook_calls w SET attempts = w.attempts + 1, \
             next_attempt_at = $1 + make_interval(secs => $2) \
           FROM picked WHERE w.id = picked.id \
           RETURNING w.id, w.automation_id, w.url, w.body, w.attempts, w.created_at) \
         SELECT c.*, a.webhook_secret_sealed AS secret_sealed \
         FROM claimed c JOIN automations a ON a.id = c.automation_id",
    )
    .bind::<Timestamptz, _>(now)
    .bind::<diesel::sql_types::Double, _>(lease_secs)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// Records an attempt: delivered, dead, or tried again at `retry_at`.
pub async fn record_webhook_attempt(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    status: &str,
    status_code: Option<i32>,
    retry_at: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE automation_webhook_calls SET status = $2, last_status = $3, \
           next_attempt_at = $4 WHERE id = $1",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(status)
    .bind::<Nullable<Integer>, _>(status_code)
    .bind::<Timestamptz, _>(retry_at)
    .execute(conn)
    .await
    .map(drop)
}
