//! The email log as transactional send uses it: rows written by `POST /send`, moved along by
//! the send worker, tracking and provider webhooks, with their history in `email_events`.
//! Every query names the project: another project's email is never found.

use chrono::{DateTime, Utc};
use diesel::deserialize::{self, FromSql};
use diesel::pg::{Pg, PgValue};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Bytea, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use store::Prepared;
use uuid::Uuid;

use super::schema::email_events;
use crate::domain::email_status::EmailStatus;

/// [`EmailStatus::is_claimable`] as an SQL literal (a literal, so that the statements stay
/// static and the partial index on unsent emails applies).
macro_rules! claimable {
    () => {
        "('accepted', 'queued')"
    };
}

/// [`EmailStatus::counts_engagement`] as an SQL literal.
macro_rules! engaged {
    () => {
        "('sent', 'delivered', 'opened', 'clicked')"
    };
}

/// The columns [`Email`] is read from, in any query over `email_log`.
pub const COLUMNS: &str = "id, project_id, site_id, contact_id, campaign_id, to_email, subject, \
    status, provider_message_id, open_count, clicked_urls, created_at, sent_at, last_opened_at, \
    last_clicked_at, html, text_body, reply_to, headers, tags, tracking, idempotency_key, \
    request_hash, attempts, last_error, provider, updated_at, answered_queued, enrollment_id, \
    step_id, hold_reason, CASE WHEN isfinite(held_until) THEN held_until END AS held_until";

impl FromSql<Text, Pg> for EmailStatus {
    fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
        let name = <String as FromSql<Text, Pg>>::from_sql(bytes)?;
        Ok(name.parse()?)
    }
}

#[derive(Debug, Clone, QueryableByName)]
pub struct Email {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub project_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub site_id: Uuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub contact_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub campaign_id: Option<Uuid>,
    #[diesel(sql_type = Text)]
    pub to_email: String,
    #[diesel(sql_type = Text)]
    pub subject: String,
    #[diesel(sql_type = Text)]
    pub status: EmailStatus,
    #[diesel(sql_type = Nullable<Text>)]
    pub provider_message_id: Option<String>,
    #[diesel(sql_type = Integer)]
    pub open_count: i32,
    #[diesel(sql_type = Array<Text>)]
    pub clicked_urls: Vec<String>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub sent_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_opened_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_clicked_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    pub html: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub text_body: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub reply_to: Option<String>,
    #[diesel(sql_type = Jsonb)]
    pub headers: Value,
    #[diesel(sql_type = Array<Text>)]
    pub tags: Vec<String>,
    #[diesel(sql_type = Bool)]
    pub tracking: bool,
    #[diesel(sql_type = Nullable<Text>)]
    pub idempotency_key: Option<String>,
    #[diesel(sql_type = Nullable<Bytea>)]
    pub request_hash: Option<Vec<u8>>,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub provider: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
    /// `POST /send` answered 202 `queued`: a replay of its key answers that again.
    #[diesel(sql_type = Bool)]
    pub answered_queued: bool,
    /// Campaign mail: the enrollment and step it was written for.
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub enrollment_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub step_id: Option<Uuid>,
    /// Campaign mail held by the delivery policy: why (null once released).
    #[diesel(sql_type = Nullable<Text>)]
    pub hold_reason: Option<String>,
    /// And when the policy looks at it again (null: at its next pass, or when its campaign is
    /// active again).
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub held_until: Option<DateTime<Utc>>,
}

impl Email {
    /// Custom headers as stored (`[[name, value], …]`).
    pub fn header_pairs(&self) -> Vec<(String, String)> {
        serde_json::from_value(self.headers.clone()).unwrap_or_default()
    }
}

/// An email to write, with the outbox job that sends it.
#[derive(Debug, Clone)]
pub struct NewEmail {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub to_email: String,
    pub subject: String,
    pub html: Option<String>,
    pub text_body: Option<String>,
    pub reply_to: Option<String>,
    pub headers: Value,
    pub tags: Vec<String>,
    pub tracking: bool,
    pub idempotency_key: Option<String>,
    pub request_hash: Option<Vec<u8>>,
    /// The job's task, as the outbox stores it.
    pub task: Value,
    /// Set when the subject, HTML or text holds template syntax: the send worker renders them
    /// for the recipient, with this as `data` (see [`crate::domain::personalize`]).
    pub template_data: Option<Value>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = email_events)]
pub struct EmailEvent {
    pub id: Uuid,
    pub kind: String,
    pub source: String,
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

mod claim;
mod events;
mod outcome;
mod write;

pub use claim::*;
pub use events::*;
pub use outcome::*;
pub use write::*;

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Email>> {
    Prepared(
        diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM email_log WHERE project_id = $1 AND id = $2"
        ))
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(id),
    )
    .get_result(conn)
    .await
    .optional()
}

/// Filters of the email list.
#[derive(Debug, Default)]
pub struct ListFilter<'a> {
    pub status: Option<EmailStatus>,
    pub to: Option<&'a str>,
    pub site_id: Option<Uuid>,
}

pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &ListFilter<'_>,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Email>> {
    diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM email_log WHERE project_id = $1 \
           AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR to_email = $3) \
           AND ($4::uuid IS NULL OR site_id = $4) AND ($5::uuid IS NULL OR id < $5) \
         ORDER BY id DESC LIMIT $6"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<Nullable<Text>, _>(filter.status.map(EmailStatus::as_str))
    .bind::<Nullable<Text>, _>(filter.to)
    .bind::<Nullable<SqlUuid>, _>(filter.site_id)
    .bind::<Nullable<SqlUuid>, _>(before)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// An email by id alone, for callers whose proof is a signature we made over that id
/// (tracking links).
pub async fn get_any(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Email>> {
    diesel::sql_query(format!("SELECT {COLUMNS} FROM email_log WHERE id = $1"))
        .bind::<SqlUuid, _>(id)
        .get_result(conn)
        .await
        .optional()
}

#[cfg(test)]
mod tests {
    use crate::domain::email_status::EmailStatus;

    #[test]
    fn the_sql_status_lists_are_the_enums() {
        assert_eq!(
            claimable!(),
            EmailStatus::sql_list(EmailStatus::is_claimable)
        );
        assert_eq!(
            engaged!(),
            EmailStatus::sql_list(EmailStatus::counts_engagement)
        );
    }
}
