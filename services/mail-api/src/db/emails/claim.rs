//! A send worker's claim on an email: taken, expired, released.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Bytea, Integer, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use store::Prepared;
use uuid::Uuid;

use super::write::suppressed_sql;
use super::*;
use crate::db::schema::email_send;

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
    /// The email's own from name (an A/B test's variant), else the site's.
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
    /// The recipient's variables when the email is personalized (`template_data` set): the
    /// contact's fields, the site, the campaign and step, the enrolling event and `data`
    /// (see [`crate::domain::personalize`]); `None` otherwise.
    #[diesel(sql_type = Nullable<diesel::sql_types::Jsonb>)]
    pub variables: Option<serde_json::Value>,
}

/// The recipient's variables of a personalized email `e` of site `s` (null when the email is
/// sent as written): looked up only for those; the project's content blocks only when the
/// email's sources mention them.
const VARIABLES: &str = "CASE WHEN e.template_data IS NOT NULL THEN \
      jsonb_build_object('email', e.to_email, 'tags', '[]'::jsonb, 'properties', '{}'::jsonb) \
      || coalesce((SELECT jsonb_strip_nulls(jsonb_build_object( \
                     'first_name', ct.first_name, 'last_name', ct.last_name, \
                     'tags', to_jsonb(ct.tags), 'properties', ct.properties)) \
                   FROM contacts ct \
                   WHERE ct.project_id = e.project_id AND ct.id = e.contact_id), '{}'::jsonb) \
      || jsonb_strip_nulls(jsonb_build_object( \
           'site', jsonb_build_object('name', s.name, 'slug', s.slug, 'from_name', s.from_name), \
           'campaign', (SELECT jsonb_build_object('id', c.id, 'name', c.name) FROM campaigns c \
                        WHERE c.project_id = e.project_id AND c.id = e.campaign_id), \
           'step', (SELECT jsonb_build_object('id', st.id, 'order', st.step_order) \
                    FROM campaign_steps st \
                    WHERE st.project_id = e.project_id AND st.id = e.step_id), \
           'event', (SELECT jsonb_build_object('name', ev.name, 'data', ev.data, \
                                               'created_at', ev.created_at) \
                     FROM enrollments en JOIN events ev \
                       ON ev.project_id = en.project_id AND ev.id = en.event_id \
                     WHERE en.project_id = e.project_id AND en.id = e.enrollment_id))) \
      || jsonb_build_object('data', e.template_data) \
      || CASE WHEN position('blocks' in coalesce(e.subject, '') || coalesce(e.html, '') \
                                       || coalesce(e.text_body, '')) > 0 \
         THEN jsonb_build_object('blocks', \
                (SELECT coalesce(jsonb_object_agg(b.name, b.html), '{}'::jsonb) \
                 FROM content_blocks b WHERE b.project_id = e.project_id)) \
         ELSE '{}'::jsonb END END";

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
                s.slug AS site_slug, coalesce(e.from_name, s.from_name) AS site_from_name, \
                d.provider_config, \
                o.id AS own_domain_id, o.domain AS own_domain, o.dkim_selector, \
                o.dkim_private_key, \
                CASE WHEN s.tracking_host = o.domain OR s.tracking_host LIKE '%.' || o.domain \
                     THEN s.tracking_host END AS site_tracking_host, \
                {variables} AS variables \
         FROM (SELECT {COLUMNS}, template_data, from_name FROM email_log \
               WHERE id = ANY($2) \
                 AND (project_id, id) IN (SELECT in_project, in_id FROM input)) AS e \
         LEFT JOIN sites s ON s.project_id = e.project_id AND s.id = e.site_id \
         LEFT JOIN project_delivery d ON d.project_id = e.project_id \
         LEFT JOIN sending_domains o ON o.project_id = e.project_id AND o.site_id = e.site_id \
             AND o.status = 'verified'",
            claimable = claimable!(),
            suppressed = suppressed_sql("e.project_id", "e.site_id", "e.to_email"),
            variables = VARIABLES
        ))
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|c| c.project_id).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(sorted.iter().map(|c| c.id).collect::<Vec<_>>())
        .bind::<Array<Bool>, _>(sorted.iter().map(|c| c.take_over).collect::<Vec<_>>())
        .bind::<Integer, _>(CLAIM_SECS),
    )
    .load(conn)
    .await
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
