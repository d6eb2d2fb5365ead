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

use super::schema::{email_events, email_send};
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

/// One value of each email, for an `unnest` column.
fn column<'a, T>(new: &'a [NewEmail], get: impl Fn(&'a NewEmail) -> T) -> Vec<T> {
    new.iter().map(get).collect()
}

/// The CTEs that give each email the CTE `row` wrote its `accepted` event and its outbox job,
/// with the event id and task of its line in the CTE `input`: the last CTEs of the statement,
/// the job in the queue of parameter `queue` (text), available after the grace of parameter
/// `queue + 1` (seconds).
fn events_and_jobs(input: &str, queue: usize) -> String {
    let grace = queue + 1;
    format!(
        "event AS ( \
           INSERT INTO email_events (id, project_id, email_log_id, kind, source, data) \
           SELECT i.event_id, r.project_id, r.id, 'accepted', 'api', 'null'::jsonb \
           FROM row r JOIN {input} i ON i.id = r.id), \
         job AS ( \
           INSERT INTO outbox (id, project_id, queue, task, available_at) \
           SELECT r.id, r.project_id, ${queue}, i.task, now() + make_interval(secs => ${grace}) \
           FROM row r JOIN {input} i ON i.id = r.id)"
    )
}

/// Writes the rows, each with its `accepted` event and the outbox job that sends it (in
/// `queue`; see [`super::outbox`]), in one statement: atomic on its own, or part of the
/// caller's transaction.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    new: &[NewEmail],
    queue: &str,
) -> QueryResult<()> {
    let tags = column(new, |e| serde_json::to_value(&e.tags).unwrap_or_default());
    Prepared(
        diesel::sql_query(format!(
            "WITH input AS ( \
           SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], \
             $6::text[], $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::jsonb[], \
             $12::bool[], $13::text[], $14::bytea[], $15::uuid[], $16::jsonb[]) \
           AS i(id, project_id, site_id, contact_id, to_email, subject, html, text_body, \
             reply_to, headers, tags, tracking, idempotency_key, request_hash, event_id, task)), \
         row AS ( \
           INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, subject, html, \
             text_body, reply_to, headers, tags, tracking, idempotency_key, request_hash) \
           SELECT id, project_id, site_id, contact_id, to_email, subject, html, text_body, \
             reply_to, headers, ARRAY(SELECT jsonb_array_elements_text(tags)), tracking, \
             idempotency_key, request_hash FROM input \
           RETURNING id, project_id), \
         {jobs} \
         SELECT 1",
            jobs = events_and_jobs("input", 17)
        ))
        .bind::<Array<SqlUuid>, _>(column(new, |e| e.id))
        .bind::<Array<SqlUuid>, _>(column(new, |e| e.project_id))
        .bind::<Array<SqlUuid>, _>(column(new, |e| e.site_id))
        .bind::<Array<Nullable<SqlUuid>>, _>(column(new, |e| e.contact_id))
        .bind::<Array<Text>, _>(column(new, |e| e.to_email.as_str()))
        .bind::<Array<Text>, _>(column(new, |e| e.subject.as_str()))
        .bind::<Array<Nullable<Text>>, _>(column(new, |e| e.html.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(column(new, |e| e.text_body.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(column(new, |e| e.reply_to.as_deref()))
        .bind::<Array<Jsonb>, _>(column(new, |e| e.headers.clone()))
        .bind::<Array<Jsonb>, _>(tags)
        .bind::<Array<Bool>, _>(column(new, |e| e.tracking))
        .bind::<Array<Nullable<Text>>, _>(column(new, |e| e.idempotency_key.as_deref()))
        .bind::<Array<Nullable<Bytea>>, _>(column(new, |e| e.request_hash.as_deref()))
        .bind::<Array<SqlUuid>, _>(column(new, |_| Uuid::now_v7()))
        .bind::<Array<Jsonb>, _>(column(new, |e| e.task.clone()))
        .bind::<Text, _>(queue)
        .bind::<diesel::sql_types::Double, _>(super::outbox::GRACE_SECS as f64),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// What [`admit_and_insert`] did with one email.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Checked, counted and written with its event and job.
    Written,
    /// The site is not the project's: nothing written or counted.
    SiteNotFound,
    /// The recipient is suppressed: nothing written or counted.
    Suppressed,
    /// The project's monthly quota could not take all of the batch's emails: nothing of the
    /// project's was written or counted; [`admit`] then decides each email alone.
    QuotaShort,
}

#[derive(QueryableByName)]
struct VerdictRow {
    #[diesel(sql_type = Bool)]
    site_exists: bool,
    #[diesel(sql_type = Bool)]
    suppressed: bool,
    #[diesel(sql_type = Bool)]
    counted: bool,
}

/// [`admit`] and [`insert`] of emails without an idempotency key, in one statement and one
/// commit: each email's checks, the count of the ones that pass against their project's
/// monthly quota (`quotas`, one per email: `None` unlimited; a project's smallest applies),
/// and their rows, events and outbox jobs. A project's emails are counted all together or
/// not at all ([`Verdict::QuotaShort`]). The counter rows stay locked until the commit,
/// taken in project order (no two batches deadlock on them). The emails' `contact_id` is
/// ignored: each gets the project's contact with its address, as [`admit`] finds it.
/// Answers a verdict per email, in order.
pub async fn admit_and_insert(
    conn: &mut AsyncPgConnection,
    new: &[NewEmail],
    quotas: &[Option<i64>],
    queue: &str,
) -> QueryResult<Vec<Verdict>> {
    let tags = column(new, |e| serde_json::to_value(&e.tags).unwrap_or_default());
    let quotas: Vec<i64> = quotas.iter().map(|q| q.unwrap_or(i64::MAX)).collect();
    let rows: Vec<VerdictRow> = Prepared(
        diesel::sql_query(format!(
            "WITH input AS ( \
           SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], \
             $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::jsonb[], $11::bool[], \
             $12::uuid[], $13::jsonb[], $14::int8[]) WITH ORDINALITY \
           AS i(id, project_id, site_id, to_email, subject, html, text_body, reply_to, headers, \
             tags, tracking, event_id, task, quota, ord)), \
         checked AS MATERIALIZED ( \
           SELECT i.*, \
             EXISTS (SELECT 1 FROM sites s \
                     WHERE s.project_id = i.project_id AND s.id = i.site_id) AS site_exists, \
             {suppressed} AS suppressed, \
             (SELECT c.id FROM contacts c \
              WHERE c.project_id = i.project_id AND c.email = i.to_email) AS contact_id \
           FROM input i), \
         wanted AS ( \
           SELECT project_id, count(*) AS n, min(quota) AS quota FROM checked \
           WHERE site_exists AND NOT suppressed GROUP BY project_id), \
         counted AS ( \
           INSERT INTO project_monthly_sends AS m (project_id, month, sends) \
           SELECT project_id, date_trunc('month', now() AT TIME ZONE 'UTC')::date, n \
           FROM wanted WHERE n <= quota ORDER BY project_id \
           ON CONFLICT (project_id, month) DO UPDATE SET sends = m.sends + excluded.sends \
             WHERE m.sends + excluded.sends \
                   <= (SELECT w.quota FROM wanted w WHERE w.project_id = m.project_id) \
           RETURNING project_id), \
         row AS ( \
           INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, subject, html, \
             text_body, reply_to, headers, tags, tracking) \
           SELECT id, project_id, site_id, contact_id, to_email, subject, html, text_body, \
             reply_to, headers, ARRAY(SELECT jsonb_array_elements_text(tags)), tracking \
           FROM checked \
           WHERE site_exists AND NOT suppressed AND project_id IN (SELECT project_id FROM counted) \
           RETURNING id, project_id), \
         {jobs} \
         SELECT site_exists, suppressed, \
                project_id IN (SELECT project_id FROM counted) AS counted \
         FROM checked ORDER BY ord",
            suppressed = suppressed_sql("i.project_id", "i.site_id", "i.to_email"),
            jobs = events_and_jobs("checked", 15)
        ))
        .bind::<Array<SqlUuid>, _>(column(new, |e| e.id))
        .bind::<Array<SqlUuid>, _>(column(new, |e| e.project_id))
        .bind::<Array<SqlUuid>, _>(column(new, |e| e.site_id))
        .bind::<Array<Text>, _>(column(new, |e| e.to_email.as_str()))
        .bind::<Array<Text>, _>(column(new, |e| e.subject.as_str()))
        .bind::<Array<Nullable<Text>>, _>(column(new, |e| e.html.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(column(new, |e| e.text_body.as_deref()))
        .bind::<Array<Nullable<Text>>, _>(column(new, |e| e.reply_to.as_deref()))
        .bind::<Array<Jsonb>, _>(column(new, |e| e.headers.clone()))
        .bind::<Array<Jsonb>, _>(tags)
        .bind::<Array<Bool>, _>(column(new, |e| e.tracking))
        .bind::<Array<SqlUuid>, _>(column(new, |_| Uuid::now_v7()))
        .bind::<Array<Jsonb>, _>(column(new, |e| e.task.clone()))
        .bind::<Array<BigInt>, _>(quotas)
        .bind::<Text, _>(queue)
        .bind::<diesel::sql_types::Double, _>(super::outbox::GRACE_SECS as f64),
    )
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| match (row.site_exists, row.suppressed, row.counted) {
            (false, _, _) => Verdict::SiteNotFound,
            (true, true, _) => Verdict::Suppressed,
            (true, false, true) => Verdict::Written,
            (true, false, false) => Verdict::QuotaShort,
        })
        .collect())
}

/// Serializes the requests of one project that carry the same idempotency key until the
/// calling transaction ends.
pub async fn lock_key(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    key: &str,
) -> QueryResult<()> {
    Prepared(
        diesel::sql_query(
            "SELECT pg_advisory_xact_lock(hashtextextended($1 || '/send/' || $2, 0))",
        )
        .bind::<Text, _>(project_id.to_string())
        .bind::<Text, _>(key),
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn find_by_key(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    key: &str,
) -> QueryResult<Option<Email>> {
    Prepared(
        diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM email_log WHERE project_id = $1 AND idempotency_key = $2"
        ))
        .bind::<SqlUuid, _>(project_id)
        .bind::<Text, _>(key),
    )
    .get_result(conn)
    .await
    .optional()
}

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

/// One send counted against a project's monthly quota, to give back if the email is not
/// written after all.
#[derive(Debug, Clone, Copy)]
pub struct Reserved {
    month: chrono::NaiveDate,
}

/// Gives a reserved send back (the email was refused or not written).
pub async fn release_monthly_send(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    reserved: Reserved,
) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE project_monthly_sends SET sends = sends - 1 \
         WHERE project_id = $1 AND month = $2 AND sends > 0",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<diesel::sql_types::Date, _>(reserved.month)
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether mail to the address from the site must be skipped: the address is on the
/// project's suppression list (bounced, complained, unsubscribed or manual), or its contact
/// unsubscribed from the site. The arguments are SQL expressions.
fn suppressed_sql(project: &str, site: &str, email: &str) -> String {
    format!(
        "(EXISTS (SELECT 1 FROM suppressions WHERE project_id = {project} AND email = {email}) \
          OR EXISTS (SELECT 1 FROM contact_sites cs JOIN contacts c ON c.id = cs.contact_id \
                     WHERE c.project_id = {project} AND c.email = {email} \
                       AND cs.site_id = {site} AND cs.status = 'unsubscribed'))"
    )
}

/// What `POST /send` checks before it writes, and the send it counted.
#[derive(Debug, QueryableByName)]
pub struct Admission {
    /// The site is the project's.
    #[diesel(sql_type = Bool)]
    pub site_exists: bool,
    #[diesel(sql_type = Bool)]
    pub suppressed: bool,
    /// The project's contact with the address, if any.
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub contact_id: Option<Uuid>,
    /// The send counted against the month's quota: `None` when a check failed (nothing was
    /// counted) or the quota is used up.
    #[diesel(sql_type = Nullable<diesel::sql_types::Date>)]
    month: Option<chrono::NaiveDate>,
}

impl Admission {
    pub fn reserved(&self) -> Option<Reserved> {
        self.month.map(|month| Reserved { month })
    }
}

/// Checks a send (the site is the project's, the recipient is not suppressed) and, when both
/// hold, counts it against this calendar month's (UTC) quota unless the project already sent
/// `limit` (`None`: unlimited), in one statement on its own, outside the request's
/// transaction: the counter row is locked only while it runs. Its commit does not wait for
/// the disk (the counter is one hot row per project; waiting would serialise every send of
/// the project behind one flush): the transaction that then writes the email does wait, and
/// the log is flushed in order, so a written email is never missing from the count.
pub async fn admit(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    email: &str,
    limit: Option<i64>,
) -> QueryResult<Admission> {
    Prepared(
        diesel::sql_query(format!(
            "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)), \
         checks AS ( \
           SELECT EXISTS (SELECT 1 FROM sites WHERE project_id = $1 AND id = $2) AS site_exists, \
             {} AS suppressed, \
             (SELECT id FROM contacts WHERE project_id = $1 AND email = $3) AS contact_id), \
         reserved AS ( \
           INSERT INTO project_monthly_sends (project_id, month, sends) \
           SELECT $1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 1 \
           FROM async, checks WHERE checks.site_exists AND NOT checks.suppressed AND $4 >= 1 \
           ON CONFLICT (project_id, month) DO UPDATE \
             SET sends = project_monthly_sends.sends + 1 \
             WHERE project_monthly_sends.sends < $4 \
           RETURNING month) \
         SELECT checks.*, (SELECT month FROM reserved) AS month FROM checks",
            suppressed_sql("$1", "$2", "$3")
        ))
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Text, _>(email)
        .bind::<BigInt, _>(limit.unwrap_or(i64::MAX)),
    )
    .get_result(conn)
    .await
}

/// An email as the send worker needs it, with its site and its project's provider, and
/// whether this delivery claimed it.
#[derive(Debug, QueryableByName)]
pub struct ForSending {
    /// The row as it was before the claim.
    #[diesel(embed)]
    pub email: Email,
    /// This delivery holds the claim: the email was unsent and not held, and no other delivery
    /// held a claim that had not expired (see [`claim_for_sending`]).
    #[diesel(sql_type = Bool)]
    pub claimed: bool,
    #[diesel(sql_type = Bool)]
    pub suppressed: bool,
    /// `None` when the site is gone.
    #[diesel(sql_type = Nullable<Text>)]
    pub site_slug: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub site_from_name: Option<String>,
    /// The project's sealed provider configuration (`None`: the deployment's default).
    #[diesel(sql_type = Nullable<Bytea>)]
    pub provider_config: Option<Vec<u8>>,
    /// The site's own domain while it is verified (`None`: the shared domain).
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub own_domain_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    pub own_domain: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub dkim_selector: Option<String>,
    /// The domain's DKIM private key, sealed.
    #[diesel(sql_type = Nullable<Bytea>)]
    pub dkim_private_key: Option<Vec<u8>>,
    /// The site's own tracking host, while its own domain is verified and the host is under it.
    #[diesel(sql_type = Nullable<Text>)]
    pub site_tracking_host: Option<String>,
}

/// One delivery's claim of the email its job sends (see [`claim_for_sending`]).
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    pub project_id: Uuid,
    pub id: Uuid,
    /// The broker redelivered this very message: the delivery that claimed it died
    /// unacknowledged, so the claim is taken whatever it is.
    pub take_over: bool,
}

/// Claims a not yet sent email for one delivery of its job and reads what sending it needs,
/// in one statement. The claim is taken unless the email is past sending or held, or another
/// delivery holds a claim that has not expired (unless [`Claim::take_over`]). A delivery that
/// then sends nothing (suppressed, failed before the provider) records an outcome, which
/// releases the claim; one that gives up without an outcome releases it with
/// [`release_claim`].
///
/// Its commit does not wait for the disk: other sessions see the claim at once, and the
/// outcome's commit, which does wait, flushes the log in order. A claim lost with a database
/// crash is no worse than a kept one: the job's next delivery calls the provider again either
/// way (at once or once the claim expires), under the same idempotency key.
pub async fn claim_for_sending(
    conn: &mut AsyncPgConnection,
    claim: Claim,
) -> QueryResult<Option<ForSending>> {
    Ok(claim_many_for_sending(conn, &[claim]).await?.pop())
}

/// [`claim_for_sending`] for many deliveries in one statement: the emails found, in no
/// particular order. The emails are looked up by their ids (`id = ANY (…)`, as
/// [`finish_many`] does). Each email must be named once: with two claims of one email in one
/// statement, both would read it claimed.
pub async fn claim_many_for_sending(
    conn: &mut AsyncPgConnection,
    claims: &[Claim],
) -> QueryResult<Vec<ForSending>> {
    let mut sorted: Vec<&Claim> = claims.iter().collect();
    sorted.sort_by_key(|c| c.id);
    Prepared(
        diesel::sql_query(format!(
            "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)), \
         input AS ( \
           SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bool[]) \
             AS i(in_project, in_id, take_over)), \
         claim AS ( \
           UPDATE email_log SET claimed_at = now() FROM async, input i \
           WHERE id = ANY($2) AND project_id = i.in_project AND id = i.in_id \
             AND held_until IS NULL AND status IN {claimable} \
             AND (claimed_at IS NULL OR claimed_at < now() - make_interval(secs => $4) \
                  OR i.take_over) \
           RETURNING id) \
         SELECT e.*, EXISTS (SELECT 1 FROM claim c WHERE c.id = e.id) AS claimed, \
                {suppressed} AS suppressed, \
                s.slug AS site_slug, s.from_name AS site_from_name, d.provider_config, \
                o.id AS own_domain_id, o.domain AS own_domain, o.dkim_selector, \
                o.dkim_private_key, \
                CASE WHEN s.tracking_host = o.domain OR s.tracking_host LIKE '%.' || o.domain \
                     THEN s.tracking_host END AS site_tracking_host \
         FROM (SELECT {COLUMNS} FROM email_log \
               WHERE id = ANY($2) \
                 AND (project_id, id) IN (SELECT in_project, in_id FROM input)) AS e \
         LEFT JOIN sites s ON s.project_id = e.project_id AND s.id = e.site_id \
         LEFT JOIN project_delivery d ON d.project_id = e.project_id \
         LEFT JOIN sending_domains o ON o.project_id = e.project_id AND o.site_id = e.site_id \
             AND o.status = 'verified'",
            claimable = claimable!(),
            suppressed = suppressed_sql("e.project_id", "e.site_id", "e.to_email")
        ))
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|c| c.project_id).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|c| c.id).collect::<Vec<_>>())
        .bind::<Array<Bool>, _>(sorted.iter().map(|c| c.take_over).collect::<Vec<_>>())
        .bind::<Integer, _>(CLAIM_SECS),
    )
    .load(conn)
    .await
}

/// Events of one kind stored per email: opens and clicks can come by the thousand, and the
/// email's counters (`open_count`, `clicked_urls`, `last_opened_at`, `last_clicked_at`) stay
/// exact without them, so only the first ones of each kind are kept.
pub const EVENTS_PER_KIND: i64 = 50;

/// Records an event unless the email already has [`EVENTS_PER_KIND`] of that kind, or no longer
/// exists. Runs in the caller's transaction: the email's row is locked first (it usually is
/// already, by the change the event records), so that concurrent events of one email count one
/// after the other and the bound is exact, and the email cannot be deleted before the event is
/// committed (its delete trigger then removes the event with it).
pub async fn add_event(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email_log_id: Uuid,
    kind: &str,
    source: &str,
    data: Value,
) -> QueryResult<()> {
    diesel::sql_query("SELECT 1 FROM email_log WHERE project_id = $1 AND id = $2 FOR UPDATE")
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(email_log_id)
        .execute(conn)
        .await?;
    diesel::sql_query(
        "INSERT INTO email_events (id, project_id, email_log_id, kind, source, data) \
         SELECT $3, $1, $2, $4, $5, $6 \
         WHERE EXISTS (SELECT 1 FROM email_log WHERE project_id = $1 AND id = $2) \
           AND (SELECT count(*) FROM email_events \
                WHERE project_id = $1 AND email_log_id = $2 AND kind = $4) < $7",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(email_log_id)
    .bind::<SqlUuid, _>(Uuid::now_v7())
    .bind::<Text, _>(kind)
    .bind::<Text, _>(source)
    .bind::<Jsonb, _>(data)
    .bind::<BigInt, _>(EVENTS_PER_KIND)
    .execute(conn)
    .await?;
    Ok(())
}

/// Up to `limit` events of the email after `after`, oldest first.
pub async fn events(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email_log_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<EmailEvent>> {
    let mut query = email_events::table
        .filter(email_events::project_id.eq(project_id))
        .filter(email_events::email_log_id.eq(email_log_id))
        .order(email_events::id)
        .limit(limit)
        .select(EmailEvent::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(email_events::id.gt(after));
    }
    query.load(conn).await
}

/// How long a worker's claim on an email holds. Longer than any provider call (the SMTP and
/// Resend clients give up after 30 s, plus 5 s to connect), short enough that the emails of a
/// worker killed mid-send go out again within a minute.
pub const CLAIM_SECS: i32 = 45;

/// An email whose claim expired unsent (its worker died): its job is published again.
#[derive(Debug, QueryableByName)]
pub struct ExpiredClaim {
    #[diesel(sql_type = SqlUuid)]
    pub project_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
}

/// Up to `limit` expired claims, locked for the caller's transaction (rows another relay holds
/// are skipped). Read through the index of unsent emails: no index holds `claimed_at`, so that
/// a claim is a HOT update.
pub async fn expired_claims(
    conn: &mut AsyncPgConnection,
    limit: i64,
) -> QueryResult<Vec<ExpiredClaim>> {
    diesel::sql_query(concat!(
        "SELECT project_id, id FROM email_log \
         WHERE claimed_at IS NOT NULL AND status IN ",
        claimable!(),
        " AND claimed_at < now() - make_interval(secs => $1) \
         ORDER BY claimed_at LIMIT $2 FOR UPDATE SKIP LOCKED"
    ))
    .bind::<Integer, _>(CLAIM_SECS)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// Lets the next delivery of the email's job claim it at once.
pub async fn release_claim(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<()> {
    diesel::update(
        email_send::table
            .filter(email_send::project_id.eq(project_id))
            .filter(email_send::id.eq(id)),
    )
    .set(email_send::claimed_at.eq(None::<DateTime<Utc>>))
    .execute(conn)
    .await?;
    Ok(())
}

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

/// An open (pixel or provider event): counted once the provider took the message; the status
/// becomes `opened` from `sent` or `delivered`. `false` when the email does not exist or was
/// never sent.
pub async fn record_open(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let changed = diesel::sql_query(concat!(
        "UPDATE email_log SET open_count = open_count + 1, last_opened_at = now(), \
           status = CASE WHEN status IN ('sent', 'delivered') THEN 'opened' ELSE status END, \
           updated_at = now() \
         WHERE project_id = $1 AND id = $2 AND status IN ",
        engaged!()
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// A click: the URL joins `clicked_urls` (once); the status becomes `clicked` from `sent`,
/// `delivered` or `opened`.
pub async fn record_click(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    url: &str,
) -> QueryResult<bool> {
    let changed = diesel::sql_query(concat!(
        "UPDATE email_log SET last_clicked_at = now(), \
           clicked_urls = CASE WHEN $3 = ANY (clicked_urls) THEN clicked_urls \
                               ELSE array_append(clicked_urls, $3) END, \
           status = CASE WHEN status IN ('sent', 'delivered', 'opened') THEN 'clicked' \
                         ELSE status END, \
           updated_at = now() \
         WHERE project_id = $1 AND id = $2 AND status IN ",
        engaged!()
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(url)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// `sent` → `delivered`; other statuses stay.
pub async fn record_delivered(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let changed = diesel::sql_query(
        "UPDATE email_log SET status = 'delivered', updated_at = now() \
         WHERE project_id = $1 AND id = $2 AND status = 'sent'",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// Any status → `status` (`bounced` or `complained`).
pub async fn record_terminal(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: EmailStatus,
) -> QueryResult<bool> {
    let changed = diesel::sql_query(
        "UPDATE email_log SET status = $3, updated_at = now() WHERE project_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(status.as_str())
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// The email a provider knows by this id (any project: provider ids are unique).
pub async fn find_by_provider_id(
    conn: &mut AsyncPgConnection,
    provider_message_id: &str,
) -> QueryResult<Option<Email>> {
    diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM email_log WHERE provider_message_id = $1"
    ))
    .bind::<Text, _>(provider_message_id)
    .get_result(conn)
    .await
    .optional()
}

/// Marks every site subscription of the project's contact with this address unsubscribed.
pub async fn unsubscribe_contact(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE contact_sites SET status = 'unsubscribed', updated_at = now() \
         WHERE status <> 'unsubscribed' AND contact_id IN \
           (SELECT id FROM contacts WHERE project_id = $1 AND email = $2)",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Text, _>(email)
    .execute(conn)
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
