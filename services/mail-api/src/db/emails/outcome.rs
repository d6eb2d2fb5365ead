//! How a send ended: the outcome recorded, one by one or in batches.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Bool, Integer, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use store::Prepared;
use uuid::Uuid;

use crate::db::schema::email_send;
use crate::domain::email_status::EmailStatus;

/// The API answered 202 `queued`: remembered for a replay of the request's key, and
/// `accepted` → `queued` unless the worker got further meanwhile. `durable`: the commit waits
/// for the disk (an email with a key, whose replay must not lose this); otherwise it does not.
pub async fn mark_answered_queued(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    durable: bool,
) -> QueryResult<()> {
    diesel::sql_query(
        "WITH commit_mode AS \
           (SELECT set_config('synchronous_commit', CASE WHEN $3 THEN 'on' ELSE 'off' END, true)) \
         UPDATE email_log SET answered_queued = true, updated_at = now(), \
           status = CASE WHEN status = 'accepted' THEN 'queued' ELSE status END \
         FROM commit_mode WHERE project_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Bool, _>(durable)
    .execute(conn)
    .await?;
    Ok(())
}

/// What [`finish_many`] answers of each email it moved: what the send's result needs (the
/// worker would otherwise read back every column of the row, its bodies included).
#[derive(Debug, Clone, QueryableByName)]
pub struct Finished {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub to_email: String,
    #[diesel(sql_type = Text)]
    pub status: EmailStatus,
    #[diesel(sql_type = Nullable<Text>)]
    pub provider_message_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
}

/// Moves a not yet sent email to `status` (`sent`, `failed` or `suppressed`), counts the
/// attempt when the provider was called, and records the event, in one statement. `None` when
/// the email had already left that stage (another delivery of the same job got there first):
/// nothing is changed.
pub async fn finish(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    outcome: Outcome<'_>,
) -> QueryResult<Option<Finished>> {
    let finishing = Finishing::new(project_id, id, outcome);
    Ok(finish_many(conn, std::slice::from_ref(&finishing))
        .await?
        .into_iter()
        .next())
}

/// An outcome to record, owned (it waits in the worker's batch of outcomes).
#[derive(Debug, Clone)]
pub struct Finishing {
    pub project_id: Uuid,
    pub id: Uuid,
    status: EmailStatus,
    provider: Option<String>,
    provider_message_id: Option<String>,
    error: Option<String>,
    data: Value,
    called_provider: bool,
}

impl Finishing {
    pub fn new(project_id: Uuid, id: Uuid, outcome: Outcome<'_>) -> Self {
        let (provider, provider_message_id, error, data) = match outcome {
            Outcome::Sent {
                provider,
                provider_message_id,
            } => (
                Some(provider),
                Some(provider_message_id),
                None,
                serde_json::json!({"provider": provider, "provider_message_id": provider_message_id}),
            ),
            Outcome::Failed { provider, reason } => (
                Some(provider),
                None,
                Some(reason),
                serde_json::json!({"provider": provider, "reason": reason}),
            ),
            Outcome::Suppressed => (None, None, None, serde_json::json!({})),
        };
        Self {
            project_id,
            id,
            status: outcome.status(),
            provider: provider.map(str::to_owned),
            provider_message_id: provider_message_id.map(str::to_owned),
            error: error.map(str::to_owned),
            data,
            called_provider: outcome.called_provider(),
        }
    }

    /// The status it records.
    pub fn status(&self) -> EmailStatus {
        self.status
    }
}

/// [`finish`] for many emails in one statement (one commit): the emails it moved, in no
/// particular order. The emails and their enrollments are looked up by their ids
/// (`id = ANY (…)`): joined to the batch alone, the planner may scan every unsent email or
/// every active enrollment instead, when its statistics are older than a large send. An email
/// listed twice moves once. Only duplicate deliveries of one job put a row in two concurrent
/// batches; should they deadlock, PostgreSQL aborts one and its caller records its outcomes
/// one by one.
pub async fn finish_many(
    conn: &mut AsyncPgConnection,
    finishing: &[Finishing],
) -> QueryResult<Vec<Finished>> {
    let mut sorted: Vec<&Finishing> = finishing.iter().collect();
    sorted.sort_by_key(|f| f.id);
    Prepared(
        diesel::sql_query(format!(
            "WITH input AS ( \
           SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], \
             $6::text[], $7::uuid[], $8::jsonb[], $9::int[]) \
             AS i(in_project, in_id, new_status, new_provider, new_message_id, new_error, \
                  event_id, event_data, attempted)), \
         done AS ( \
           UPDATE email_log SET status = t.new_status, \
             provider = coalesce(t.new_provider, provider), \
             provider_message_id = t.new_message_id, last_error = t.new_error, \
             updated_at = now(), claimed_at = NULL, attempts = attempts + t.attempted, \
             sent_at = CASE WHEN t.new_status = 'sent' THEN now() ELSE sent_at END \
           FROM input t \
           WHERE id = ANY($2) AND project_id = t.in_project AND id = t.in_id \
             AND held_until IS NULL AND status IN {claimable} \
           RETURNING id, project_id, enrollment_id, to_email, status, provider_message_id, \
             last_error, t.event_id, t.event_data), \
         event AS ( \
           INSERT INTO email_events (id, project_id, email_log_id, kind, source, data) \
           SELECT event_id, project_id, id, status, 'worker', event_data FROM done), \
         progress AS ({ENROLLMENT_PROGRESS}) \
         SELECT id, to_email, status, provider_message_id, last_error FROM done",
            claimable = claimable!()
        ))
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|f| f.project_id).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|f| f.id).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(sorted.iter().map(|f| f.status.as_str()).collect::<Vec<_>>())
        .bind::<Array<Nullable<Text>>, _>(optional_texts(&sorted, |f| f.provider.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(optional_texts(&sorted, |f| {
            f.provider_message_id.as_deref()
        }))
        .bind::<Array<Nullable<Text>>, _>(optional_texts(&sorted, |f| f.error.as_deref()))
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|_| Uuid::now_v7()).collect::<Vec<_>>())
        .bind::<Array<Jsonb>, _>(sorted.iter().map(|f| f.data.clone()).collect::<Vec<_>>())
        .bind::<Array<Integer>, _>(
            sorted
                .iter()
                .map(|f| i32::from(f.called_provider))
                .collect::<Vec<_>>(),
        ),
    )
    .load(conn)
    .await
}

/// One optional text of each outcome, for an `unnest` column.
fn optional_texts<'a>(
    finishing: &[&'a Finishing],
    get: impl Fn(&'a Finishing) -> Option<&'a str>,
) -> Vec<Option<&'a str>> {
    finishing.iter().map(|f| get(f)).collect()
}

/// Campaign mail that left the queue moves its enrollment on: the next step becomes due its
/// delay from now, or the enrollment completes when none is left; a suppressed send ends it.
/// Only an enrollment waiting for this email (active, nothing due) moves. A CTE of
/// [`finish_many`], whose `done` holds the emails with their new status; should one batch
/// hold two emails of one enrollment, the one with the lowest id moves it (as if finished
/// first).
const ENROLLMENT_PROGRESS: &str = "\
    UPDATE enrollments e SET updated_at = now(), \
      status = CASE WHEN d.status = 'suppressed' THEN 'exited' \
                    WHEN next_step_delay(e.campaign_id, e.current_step) IS NULL THEN 'completed' \
                    ELSE 'active' END, \
      exit_reason = CASE WHEN d.status = 'suppressed' THEN 'suppressed' END, \
      next_step_at = CASE WHEN d.status <> 'suppressed' THEN now() \
        + next_step_delay(e.campaign_id, e.current_step) * interval '1 minute' END, \
      ended_at = CASE WHEN d.status = 'suppressed' \
                        OR next_step_delay(e.campaign_id, e.current_step) IS NULL THEN now() END \
    FROM (SELECT DISTINCT ON (enrollment_id) enrollment_id, status FROM done \
          WHERE enrollment_id IS NOT NULL ORDER BY enrollment_id, id) d \
    WHERE e.id = ANY (ARRAY(SELECT enrollment_id FROM done WHERE enrollment_id IS NOT NULL)) \
      AND e.id = d.enrollment_id AND e.status = 'active' AND e.next_step_at IS NULL";

/// How a send ended.
#[derive(Debug, Clone, Copy)]
pub enum Outcome<'a> {
    Sent {
        provider: &'a str,
        provider_message_id: &'a str,
    },
    Failed {
        provider: &'a str,
        reason: &'a str,
    },
    Suppressed,
}

impl Outcome<'_> {
    /// The status it records.
    pub fn status(&self) -> EmailStatus {
        match self {
            Self::Sent { .. } => EmailStatus::Sent,
            Self::Failed { .. } => EmailStatus::Failed,
            Self::Suppressed => EmailStatus::Suppressed,
        }
    }

    /// Whether the provider was asked (an attempt to count).
    pub fn called_provider(&self) -> bool {
        match self {
            Self::Sent { .. } => true,
            Self::Failed { provider, .. } => *provider != "none",
            Self::Suppressed => false,
        }
    }
}

/// Counts a failed attempt and keeps its error, for an email still being retried; releases the
/// claim, so that the retry can take it.
pub async fn note_error(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    error: &str,
) -> QueryResult<()> {
    diesel::update(
        email_send::table
            .filter(email_send::project_id.eq(project_id))
            .filter(email_send::id.eq(id)),
    )
    .set((
        email_send::attempts.eq(email_send::attempts + 1),
        email_send::last_error.eq(error),
        email_send::updated_at.eq(diesel::dsl::now),
        email_send::claimed_at.eq(None::<DateTime<Utc>>),
    ))
    .execute(conn)
    .await?;
    Ok(())
}
