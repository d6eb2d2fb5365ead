//! Writing emails: the admission checks, the quota count and the rows with their outbox jobs.

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Bytea, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use store::Prepared;
use uuid::Uuid;

use super::*;

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
/// `queue`; see [`crate::db::outbox`]), in one statement: atomic on its own, or part of the
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
             $12::bool[], $13::text[], $14::bytea[], $15::uuid[], $16::jsonb[], $19::jsonb[]) \
           AS i(id, project_id, site_id, contact_id, to_email, subject, html, text_body, \
             reply_to, headers, tags, tracking, idempotency_key, request_hash, event_id, task, \
             template_data)), \
         row AS ( \
           INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, subject, html, \
             text_body, reply_to, headers, tags, tracking, idempotency_key, request_hash, \
             template_data) \
           SELECT id, project_id, site_id, contact_id, to_email, subject, html, text_body, \
             reply_to, headers, ARRAY(SELECT jsonb_array_elements_text(tags)), tracking, \
             idempotency_key, request_hash, template_data FROM input \
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
        .bind::<diesel::sql_types::Double, _>(crate::db::outbox::GRACE_SECS as f64)
        .bind::<Array<Nullable<Jsonb>>, _>(column(new, |e| e.template_data.clone())),
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
             $12::uuid[], $13::jsonb[], $14::int8[], $17::jsonb[]) WITH ORDINALITY \
           AS i(id, project_id, site_id, to_email, subject, html, text_body, reply_to, headers, \
             tags, tracking, event_id, task, quota, template_data, ord)), \
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
             text_body, reply_to, headers, tags, tracking, template_data) \
           SELECT id, project_id, site_id, contact_id, to_email, subject, html, text_body, \
             reply_to, headers, ARRAY(SELECT jsonb_array_elements_text(tags)), tracking, \
             template_data \
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
        .bind::<diesel::sql_types::Double, _>(crate::db::outbox::GRACE_SECS as f64)
        .bind::<Array<Nullable<Jsonb>>, _>(column(new, |e| e.template_data.clone())),
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
pub(super) fn suppressed_sql(project: &str, site: &str, email: &str) -> String {
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
