//! GDPR erasure: a contact's personal data goes, what the project's figures are made of stays
//! as anonymous rows. One transaction erases the contact, its subscriptions, enrollments and
//! events, scrubs the personal data of the emails sent to it (recipient, subject, bodies,
//! headers, clicked links, provider payloads), detaches its conversions (kept, for revenue
//! totals) and records the erasure in a log that holds no personal data.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::sql;
use super::sql::fragments::{EMAILS, ERASED, IDEMPOTENT_ANSWERS};

/// How many rows of each kind an erasure removed or scrubbed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErasureCounts {
    /// The contact's site subscriptions, deleted.
    pub subscriptions: i64,
    /// The contact's campaign enrollments, deleted.
    pub enrollments: i64,
    /// The contact's events, deleted.
    pub events: i64,
    /// Emails to the contact (by contact or by address) whose recipient, subject, bodies,
    /// headers, reply-to, clicked links, idempotency key, provider message id and last error
    /// were erased; their status, open count and times stay, so delivery figures hold.
    pub emails: i64,
    /// The history entries of those emails whose details (links, bounce reports) were erased;
    /// their kinds and times stay.
    pub email_events: i64,
    /// Provider webhook receipts about those emails whose payload was erased.
    pub webhook_receipts: i64,
    /// The contact's conversions, kept without their contact and metadata (revenue totals
    /// hold).
    pub conversions: i64,
    /// Stored answers of idempotent requests that named the contact or its emails, deleted.
    pub idempotency_records: i64,
}

/// The contact an erasure is about.
#[derive(Debug, Clone, QueryableByName)]
pub struct Subject {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub email: String,
}

#[derive(Debug, Clone, QueryableByName)]
pub struct LogEntry {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub contact_id: Uuid,
    #[diesel(sql_type = Text)]
    pub email_sha256: String,
    #[diesel(sql_type = Jsonb)]
    pub erased: Value,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub key_id: Option<Uuid>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

/// The project's contact `id`, locked for the rest of the transaction when `lock`.
pub async fn subject(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    lock: bool,
) -> QueryResult<Option<Subject>> {
    let lock = if lock { " FOR UPDATE" } else { "" };
    diesel::sql_query(format!(
        "SELECT id, email FROM contacts WHERE project_id = $1 AND id = $2{lock}"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .get_result(conn)
    .await
    .optional()
}

async fn email_ids(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    subject: &Subject,
) -> QueryResult<Vec<Uuid>> {
    let rows: Vec<Id> = diesel::sql_query(EMAILS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(subject.id)
        .bind::<Text, _>(&subject.email)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = BigInt)]
    subscriptions: i64,
    #[diesel(sql_type = BigInt)]
    enrollments: i64,
    #[diesel(sql_type = BigInt)]
    events: i64,
    #[diesel(sql_type = BigInt)]
    email_events: i64,
    #[diesel(sql_type = BigInt)]
    webhook_receipts: i64,
    #[diesel(sql_type = BigInt)]
    conversions: i64,
    #[diesel(sql_type = BigInt)]
    idempotency_records: i64,
}

/// What erasing `subject` would erase (nothing changes).
pub async fn preview(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    subject: &Subject,
) -> QueryResult<ErasureCounts> {
    let emails = email_ids(conn, project_id, subject).await?;
    let counted: Counted = diesel::sql_query(sql::gdpr::PREVIEW.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(subject.id)
        .bind::<Text, _>(&subject.email)
        .bind::<Array<SqlUuid>, _>(&emails)
        .get_result(conn)
        .await?;
    Ok(ErasureCounts {
        subscriptions: counted.subscriptions,
        enrollments: counted.enrollments,
        events: counted.events,
        emails: emails.len() as i64,
        email_events: counted.email_events,
        webhook_receipts: counted.webhook_receipts,
        conversions: counted.conversions,
        idempotency_records: counted.idempotency_records,
    })
}

/// What [`erase`] did.
pub enum Erasure {
    Done {
        entry: Box<LogEntry>,
        counts: ErasureCounts,
        /// The project suppresses the address: the suppression is kept (it is what stops
        /// mail to the address).
        suppression_kept: bool,
    },
    NotFound,
}

/// Erases the project's contact `contact_id` in one transaction and logs it (`key_id`: the
/// key that asked).
pub async fn erase(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    key_id: Uuid,
) -> QueryResult<Erasure> {
    conn.transaction::<_, diesel::result::Error, _>(async |conn| {
        let Some(subject) = self::subject(conn, project_id, contact_id, true).await? else {
            return Ok(Erasure::NotFound);
        };
        let emails: Vec<Id> = diesel::sql_query(sql::gdpr::ERASE_EMAILS.render())
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(subject.id)
            .bind::<Text, _>(&subject.email)
            .load(conn)
            .await?;
        let emails: Vec<Uuid> = emails.into_iter().map(|e| e.id).collect();
        let email_events = diesel::sql_query(
            "UPDATE email_events SET data = '{}' WHERE project_id = $1 AND email_log_id = ANY($2)",
        )
        .bind::<SqlUuid, _>(project_id)
        .bind::<Array<SqlUuid>, _>(&emails)
        .execute(conn)
        .await?;
        let webhook_receipts = diesel::sql_query(
            "UPDATE webhook_receipts SET payload = '{\"erased\": true}' \
             WHERE email_log_id = ANY($1)",
        )
        .bind::<Array<SqlUuid>, _>(&emails)
        .execute(conn)
        .await?;
        let conversions = diesel::sql_query(
            "UPDATE conversions SET contact_id = NULL, metadata = '{}' \
             WHERE project_id = $1 AND contact_id = $2",
        )
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(subject.id)
        .execute(conn)
        .await?;
        let idempotency_records = diesel::sql_query(format!("DELETE {IDEMPOTENT_ANSWERS}"))
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(subject.id)
            .bind::<Text, _>(&subject.email)
            .bind::<Array<SqlUuid>, _>(&emails)
            .execute(conn)
            .await?;
        // List hygiene's audit keeps what it did, not to whom.
        diesel::sql_query(format!(
            "UPDATE hygiene_audit SET email = '{ERASED}', contact_id = NULL \
             WHERE project_id = $1 AND (contact_id = $2 OR email = $3)"
        ))
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(subject.id)
        .bind::<Text, _>(&subject.email)
        .execute(conn)
        .await?;
        let by_contact = |table: &str| {
            diesel::sql_query(format!(
                "DELETE FROM {table} WHERE project_id = $1 AND contact_id = $2"
            ))
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(subject.id)
        };
        // The address's signups, with their consent, go with it.
        diesel::sql_query("DELETE FROM form_submissions WHERE project_id = $1 AND email = $2")
            .bind::<SqlUuid, _>(project_id)
            .bind::<Text, _>(&subject.email)
            .execute(conn)
            .await?;
        let enrollments = by_contact("enrollments").execute(conn).await?;
        let events = by_contact("events").execute(conn).await?;
        let subscriptions = diesel::sql_query("DELETE FROM contact_sites WHERE contact_id = $1")
            .bind::<SqlUuid, _>(subject.id)
            .execute(conn)
            .await?;
        diesel::sql_query("DELETE FROM contacts WHERE project_id = $1 AND id = $2")
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(subject.id)
            .execute(conn)
            .await?;
        diesel::sql_query(
            "UPDATE project_usage SET contacts = greatest(contacts - 1, 0) WHERE project_id = $1",
        )
        .bind::<SqlUuid, _>(project_id)
        .execute(conn)
        .await?;
        let counts = ErasureCounts {
            subscriptions: subscriptions as i64,
            enrollments: enrollments as i64,
            events: events as i64,
            emails: emails.len() as i64,
            email_events: email_events as i64,
            webhook_receipts: webhook_receipts as i64,
            conversions: conversions as i64,
            idempotency_records: idempotency_records as i64,
        };
        let erased = serde_json::to_value(counts).unwrap_or(Value::Null);
        let entry: LogEntry = diesel::sql_query(sql::gdpr::RECORD_DELETION)
            .bind::<SqlUuid, _>(Uuid::now_v7())
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(subject.id)
            .bind::<Text, _>(&subject.email)
            .bind::<Jsonb, _>(&erased)
            .bind::<SqlUuid, _>(key_id)
            .get_result(conn)
            .await?;
        super::notifications::add(
            conn,
            project_id,
            super::notifications::kind::CONTACT_ERASED,
            "A contact's personal data was erased",
            serde_json::json!({"deletion_id": entry.id, "contact_id": entry.contact_id}),
        )
        .await?;
        let suppression_kept = suppressed(conn, project_id, &subject.email).await?;
        Ok(Erasure::Done {
            entry: Box::new(entry),
            counts,
            suppression_kept,
        })
    })
    .await
}

/// Up to `limit` of the project's erasures before `before`, newest first.
pub async fn log(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<LogEntry>> {
    diesel::sql_query(
        "SELECT id, contact_id, email_sha256, erased, key_id, created_at \
         FROM gdpr_deletion_log \
         WHERE project_id = $1 AND ($2::uuid IS NULL OR id < $2) \
         ORDER BY id DESC LIMIT $3",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Nullable<SqlUuid>, _>(before)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// Whether the project suppresses this address (an erasure keeps the suppression).
pub async fn suppressed(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
) -> QueryResult<bool> {
    use super::schema::suppressions;
    diesel::select(diesel::dsl::exists(
        suppressions::table
            .filter(suppressions::project_id.eq(project_id))
            .filter(suppressions::email.eq(email)),
    ))
    .get_result(conn)
    .await
}
