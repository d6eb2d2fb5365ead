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
    /// What a personalized email's templates read of its recipient.
    #[diesel(embed)]
    pub recipient: Recipient,
}

/// What the templates of a personalized email (`template_data` set) read of its recipient,
/// as plain columns: [`Recipient::variables`] makes them the variables
/// (see [`crate::domain::personalize`]). All `None` for an email sent as written: none of its
/// lookups run then.
#[derive(Debug, QueryableByName)]
pub struct Recipient {
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub template_data: Option<Value>,
    #[diesel(sql_type = Nullable<Text>)]
    pub contact_first_name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub contact_last_name: Option<String>,
    #[diesel(sql_type = Nullable<Array<Text>>)]
    pub contact_tags: Option<Vec<String>>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub contact_properties: Option<Value>,
    #[diesel(sql_type = Nullable<Text>)]
    pub site_name: Option<String>,
    /// The site's own from name (not an A/B variant's).
    #[diesel(sql_type = Nullable<Text>)]
    pub site_own_from_name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub campaign_name: Option<String>,
    #[diesel(sql_type = Nullable<Integer>)]
    pub step_order: Option<i32>,
    /// The event that enrolled the contact: `{name, data, created_at}`, nulls left out.
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub event: Option<Value>,
    /// The project's content blocks by name, only when the email's sources mention them.
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub blocks: Option<Value>,
}

impl Recipient {
    /// The variables of email `email` of site `site_slug` when it is personalized: the
    /// contact's fields (`email`, `first_name`, `last_name`, `tags`, `properties`), `site`,
    /// `campaign`, `step`, `event`, `data` and `blocks`. A value that is null is left out, as
    /// are null members of `properties` (a template's `default` fills them), but not of `data`,
    /// which is the request's own.
    pub fn variables(self, email: &Email, site_slug: &str) -> Option<Value> {
        let data = self.template_data?;
        let mut vars = serde_json::Map::new();
        vars.insert("email".into(), email.to_email.clone().into());
        if let Some(first_name) = self.contact_first_name {
            vars.insert("first_name".into(), first_name.into());
        }
        if let Some(last_name) = self.contact_last_name {
            vars.insert("last_name".into(), last_name.into());
        }
        vars.insert("tags".into(), self.contact_tags.unwrap_or_default().into());
        let properties = self
            .contact_properties
            .map_or_else(|| Value::Object(Default::default()), strip_nulls);
        vars.insert("properties".into(), properties);
        let mut site = serde_json::Map::new();
        if let Some(name) = self.site_name {
            site.insert("name".into(), name.into());
        }
        site.insert("slug".into(), site_slug.into());
        if let Some(from_name) = self.site_own_from_name {
            site.insert("from_name".into(), from_name.into());
        }
        vars.insert("site".into(), site.into());
        if let (Some(id), Some(name)) = (email.campaign_id, self.campaign_name) {
            vars.insert(
                "campaign".into(),
                serde_json::json!({"id": id, "name": name}),
            );
        }
        if let (Some(id), Some(order)) = (email.step_id, self.step_order) {
            vars.insert("step".into(), serde_json::json!({"id": id, "order": order}));
        }
        if let Some(event) = self.event {
            vars.insert("event".into(), event);
        }
        vars.insert("data".into(), data);
        if let Some(blocks) = self.blocks {
            vars.insert(crate::domain::personalize::BLOCKS.into(), blocks);
        }
        Some(vars.into())
    }
}

/// `value` without the object members that are null, at any depth (PostgreSQL's
/// `jsonb_strip_nulls`: a null in an array stays).
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// The columns of [`Recipient`] for email `e` of site `s` with its contact `pc` (joined by
/// [`RECIPIENT_CONTACT`]). Each lookup is guarded by `template_data`, so that an email sent as
/// written pays for none.
const RECIPIENT: &str = "e.template_data, \
      pc.first_name AS contact_first_name, pc.last_name AS contact_last_name, \
      pc.tags AS contact_tags, pc.properties AS contact_properties, \
      s.name AS site_name, s.from_name AS site_own_from_name, \
      CASE WHEN e.template_data IS NOT NULL AND e.campaign_id IS NOT NULL THEN \
        (SELECT c.name FROM campaigns c \
         WHERE c.project_id = e.project_id AND c.id = e.campaign_id) END AS campaign_name, \
      CASE WHEN e.template_data IS NOT NULL AND e.step_id IS NOT NULL THEN \
        (SELECT st.step_order FROM campaign_steps st \
         WHERE st.project_id = e.project_id AND st.id = e.step_id) END AS step_order, \
      CASE WHEN e.template_data IS NOT NULL AND e.enrollment_id IS NOT NULL THEN \
        (SELECT jsonb_strip_nulls(jsonb_build_object('name', ev.name, 'data', ev.data, \
                                                     'created_at', ev.created_at)) \
         FROM enrollments en JOIN events ev \
           ON ev.project_id = en.project_id AND ev.id = en.event_id \
         WHERE en.project_id = e.project_id AND en.id = e.enrollment_id) END AS event, \
      CASE WHEN e.template_data IS NOT NULL \
            AND position('blocks' in coalesce(e.subject, '') || coalesce(e.html, '') \
                                     || coalesce(e.text_body, '')) > 0 THEN \
        (SELECT coalesce(jsonb_object_agg(b.name, b.html), '{}'::jsonb) \
         FROM content_blocks b WHERE b.project_id = e.project_id) END AS blocks";

/// The contact of a personalized email `e`. `OFFSET 0` keeps the subquery whole, so that its
/// outer-only condition is a filter tested once per email before the index is read.
const RECIPIENT_CONTACT: &str = "LEFT JOIN LATERAL ( \
      SELECT ct.first_name, ct.last_name, ct.tags, ct.properties FROM contacts ct \
      WHERE e.template_data IS NOT NULL \
        AND ct.project_id = e.project_id AND ct.id = e.contact_id OFFSET 0) pc ON true";

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
                {recipient} \
         FROM (SELECT {COLUMNS}, template_data, from_name FROM email_log \
               WHERE id = ANY($2) \
                 AND (project_id, id) IN (SELECT in_project, in_id FROM input)) AS e \
         LEFT JOIN sites s ON s.project_id = e.project_id AND s.id = e.site_id \
         LEFT JOIN project_delivery d ON d.project_id = e.project_id \
         {recipient_contact} \
         LEFT JOIN sending_domains o ON o.project_id = e.project_id AND o.site_id = e.site_id \
             AND o.status = 'verified'",
            claimable = claimable!(),
            suppressed = suppressed_sql("e.project_id", "e.site_id", "e.to_email"),
            recipient = RECIPIENT,
            recipient_contact = RECIPIENT_CONTACT,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_members_are_left_out_at_any_depth_but_nulls_in_arrays_stay() {
        let properties = json!({"plan": null, "visits": 3, "address": {"city": null, "zip": "1"},
                                "seen": [null, {"at": null}]});
        assert_eq!(
            strip_nulls(properties),
            json!({"visits": 3, "address": {"zip": "1"}, "seen": [null, {}]})
        );
    }
}
