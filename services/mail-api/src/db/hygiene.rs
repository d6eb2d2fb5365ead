//! List hygiene: a configuration per project, the subscriptions a run would end, and the
//! audit of what runs did.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::contact_tools::inactive_since;
use super::schema::{hygiene_audit, hygiene_configs};
use super::sql;

#[derive(Debug, Clone, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = hygiene_configs)]
pub struct Config {
    pub inactive_days: i32,
    pub remove_bounced: bool,
    pub remove_complained: bool,
    pub suppress_role_addresses: bool,
    pub updated_at: DateTime<Utc>,
}

/// The project's configuration; `None`: never set (the defaults apply).
pub async fn config(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<Option<Config>> {
    hygiene_configs::table
        .find(project_id)
        .select(Config::as_select())
        .first(conn)
        .await
        .optional()
}

/// A change of the configuration: `None` keeps the stored value (or the default).
#[derive(Debug, Default)]
pub struct ConfigChange {
    pub inactive_days: Option<i32>,
    pub remove_bounced: Option<bool>,
    pub remove_complained: Option<bool>,
    pub suppress_role_addresses: Option<bool>,
}

pub async fn update_config(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    change: &ConfigChange,
) -> QueryResult<Config> {
    diesel::sql_query(sql::hygiene::UPDATE_CONFIG)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<Integer>, _>(change.inactive_days)
        .bind::<Nullable<Bool>, _>(change.remove_bounced)
        .bind::<Nullable<Bool>, _>(change.remove_complained)
        .bind::<Nullable<Bool>, _>(change.suppress_role_addresses)
        .get_result(conn)
        .await
}

/// What a run matches with.
#[derive(Debug)]
pub struct Rules<'a> {
    pub remove_bounced: bool,
    pub remove_complained: bool,
    /// Local parts (before any `+tag`) of role addresses; empty: the rule is off.
    pub role_local_parts: &'a [String],
    /// Subscriptions older than this without an open, click or event since: inactive.
    pub inactive_cutoff: Option<DateTime<Utc>>,
}

/// A live subscription a run ends, and why.
#[derive(Debug, Clone, QueryableByName)]
pub struct Candidate {
    #[diesel(sql_type = SqlUuid)]
    pub contact_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub site_id: Uuid,
    #[diesel(sql_type = Text)]
    pub email: String,
    /// `complained`, `bounced`, `role_address` or `inactive` (the first that matches).
    #[diesel(sql_type = Text)]
    pub reason: String,
}

/// The project's live subscriptions (to `site` when given) that `rules` end, in site and
/// contact order, locked for update.
pub async fn candidates(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site: Option<Uuid>,
    rules: &Rules<'_>,
) -> QueryResult<Vec<Candidate>> {
    // The latest email to the contact decides whether a bounce or complaint still stands (a
    // later delivery after a lifted suppression does not count against it).
    let latest = "(SELECT e.status FROM email_log e WHERE e.project_id = $1 \
                   AND e.contact_id = c.id ORDER BY e.id DESC LIMIT 1)";
    let suppressed = |reason: &str| {
        format!(
            "EXISTS (SELECT 1 FROM suppressions x WHERE x.project_id = $1 \
             AND x.email = c.email AND x.reason = '{reason}')"
        )
    };
    diesel::sql_query(format!(
        "SELECT cs.contact_id, cs.site_id, c.email, r.reason \
           FROM contact_sites cs \
           JOIN contacts c ON c.id = cs.contact_id AND c.project_id = $1 \
           JOIN sites s ON s.id = cs.site_id AND s.project_id = $1 \
           CROSS JOIN LATERAL (SELECT CASE \
             WHEN $3 AND ({complained} OR {latest} = 'complained') THEN 'complained' \
             WHEN $4 AND ({bounced} OR {latest} = 'bounced') THEN 'bounced' \
             WHEN split_part(split_part(c.email, '@', 1), '+', 1) = ANY($5) \
               THEN 'role_address' \
             WHEN $6::timestamptz IS NOT NULL AND cs.created_at < $6 AND {inactive} \
               THEN 'inactive' \
           END AS reason) AS r \
          WHERE cs.status = 'subscribed' AND ($2::uuid IS NULL OR cs.site_id = $2) \
            AND r.reason IS NOT NULL \
          ORDER BY cs.site_id, cs.contact_id \
          FOR UPDATE OF cs",
        complained = suppressed("complained"),
        bounced = suppressed("bounced"),
        inactive = inactive_since("$1", "$6"),
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<Nullable<SqlUuid>, _>(site)
    .bind::<Bool, _>(rules.remove_complained)
    .bind::<Bool, _>(rules.remove_bounced)
    .bind::<Array<Text>, _>(rules.role_local_parts)
    .bind::<Nullable<Timestamptz>, _>(rules.inactive_cutoff)
    .load(conn)
    .await
}

/// Ends these subscriptions (pairs of contact and site).
pub async fn unsubscribe(
    conn: &mut AsyncPgConnection,
    contacts: &[Uuid],
    sites: &[Uuid],
) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE contact_sites cs SET status = 'unsubscribed', updated_at = now() \
           FROM unnest($1::uuid[], $2::uuid[]) AS p(contact_id, site_id) \
          WHERE cs.contact_id = p.contact_id AND cs.site_id = p.site_id",
    )
    .bind::<Array<SqlUuid>, _>(contacts)
    .bind::<Array<SqlUuid>, _>(sites)
    .execute(conn)
    .await
}

/// Suppresses the addresses (each with its reason and note); an address suppressed already
/// keeps its record.
pub async fn suppress(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    emails: &[String],
    reasons: &[String],
    notes: &[String],
) -> QueryResult<usize> {
    let ids: Vec<Uuid> = emails.iter().map(|_| Uuid::now_v7()).collect();
    diesel::sql_query(
        "INSERT INTO suppressions (id, project_id, email, reason, note) \
         SELECT p.id, $1, p.email, p.reason, p.note \
           FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[]) AS p(id, email, reason, note) \
         ON CONFLICT (project_id, email) DO NOTHING",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Array<SqlUuid>, _>(ids)
    .bind::<Array<Text>, _>(emails)
    .bind::<Array<Text>, _>(reasons)
    .bind::<Array<Text>, _>(notes)
    .execute(conn)
    .await
}

/// One action of a run, to record.
#[derive(Debug)]
pub struct NewEntry {
    pub site_id: Uuid,
    pub contact_id: Uuid,
    pub email: String,
    pub action: &'static str,
    pub reason: String,
}

pub async fn record(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    run_id: Uuid,
    entries: &[NewEntry],
) -> QueryResult<usize> {
    let ids: Vec<Uuid> = entries.iter().map(|_| Uuid::now_v7()).collect();
    let sites: Vec<Uuid> = entries.iter().map(|e| e.site_id).collect();
    let contacts: Vec<Uuid> = entries.iter().map(|e| e.contact_id).collect();
    let emails: Vec<&str> = entries.iter().map(|e| e.email.as_str()).collect();
    let actions: Vec<&str> = entries.iter().map(|e| e.action).collect();
    let reasons: Vec<&str> = entries.iter().map(|e| e.reason.as_str()).collect();
    diesel::sql_query(sql::hygiene::RECORD)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(run_id)
        .bind::<Array<SqlUuid>, _>(ids)
        .bind::<Array<SqlUuid>, _>(sites)
        .bind::<Array<SqlUuid>, _>(contacts)
        .bind::<Array<Text>, _>(emails)
        .bind::<Array<Text>, _>(actions)
        .bind::<Array<Text>, _>(reasons)
        .execute(conn)
        .await
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = hygiene_audit)]
pub struct Entry {
    pub id: Uuid,
    pub run_id: Uuid,
    pub site_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub email: String,
    pub action: String,
    pub reason: String,
    pub created_at: DateTime<Utc>,
}

/// Up to `limit` of the site's audit entries before `before`, newest first.
pub async fn entries(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Entry>> {
    let mut query = hygiene_audit::table
        .filter(hygiene_audit::project_id.eq(project_id))
        .filter(hygiene_audit::site_id.eq(site_id))
        .order(hygiene_audit::id.desc())
        .limit(limit)
        .select(Entry::as_select())
        .into_boxed();
    if let Some(before) = before {
        query = query.filter(hygiene_audit::id.lt(before));
    }
    query.load(conn).await
}
