//! Own sending domains (`sending_domains`): one per site at most, its DKIM key (the private
//! half sealed), its state, and the `domain.dns_lost` event written with the change that
//! loses it.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use secrets::Kek;
use serde_json::{Value, json};
use uuid::Uuid;

use super::schema::{outbound_events, sending_domains};

/// `domain.dns_lost`: a record of a verified domain is gone; its site sends from the shared
/// domain until the domain is verified again.
pub const DOMAIN_DNS_LOST: &str = "domain.dns_lost";

pub const PENDING: &str = "pending";
pub const VERIFIED: &str = "verified";
pub const LOST: &str = "lost";

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = sending_domains)]
pub struct SendingDomain {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub domain: String,
    pub dkim_selector: String,
    pub dkim_public_key: String,
    pub status: String,
    /// By purpose (`spf`, …): `found`, `missing` or `error`, as the last check found them.
    pub records: Value,
    pub verified_at: Option<DateTime<Utc>>,
    pub checked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = sending_domains)]
pub struct NewDomain<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub domain: &'a str,
    pub dkim_selector: &'a str,
    pub dkim_public_key: &'a str,
    pub dkim_private_key: Vec<u8>,
}

fn context(project_id: Uuid, domain_id: Uuid) -> Vec<u8> {
    format!("mail/project/{project_id}/domain/{domain_id}/dkim").into_bytes()
}

/// Seals a domain's private key (PKCS#1 PEM) for the row `domain_id`.
pub fn seal_key(kek: &Kek, project_id: Uuid, domain_id: Uuid, pem: &str) -> Vec<u8> {
    kek.seal(pem.as_bytes(), &context(project_id, domain_id))
}

/// Opens what [`seal_key`] sealed.
pub fn open_key(
    kek: &Kek,
    project_id: Uuid,
    domain_id: Uuid,
    sealed: &[u8],
) -> anyhow::Result<String> {
    kek.open_text(sealed, &context(project_id, domain_id))
        .map_err(|e| anyhow::anyhow!("DKIM key of domain {domain_id}: {e}"))
}

/// The site's domain, if it has one.
pub async fn of_site(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Option<SendingDomain>> {
    sending_domains::table
        .filter(sending_domains::project_id.eq(project_id))
        .filter(sending_domains::site_id.eq(site_id))
        .select(SendingDomain::as_select())
        .first(conn)
        .await
        .optional()
}

/// Whether another project than `project_id` has verified `domain` (a domain verified by one
/// project is not another's to register).
pub async fn verified_by_another(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    domain: &str,
) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        sending_domains::table
            .filter(sending_domains::domain.eq(domain))
            .filter(sending_domains::project_id.ne(project_id))
            .filter(sending_domains::status.eq(VERIFIED)),
    ))
    .get_result(conn)
    .await
}

/// Registers the site's domain, replacing the one it had (a new key, unverified). The site is
/// the project's (checked first), so the row it replaces is too.
pub async fn register(
    conn: &mut AsyncPgConnection,
    new: NewDomain<'_>,
) -> QueryResult<SendingDomain> {
    use diesel::upsert::excluded;
    diesel::insert_into(sending_domains::table)
        .values(&new)
        .on_conflict(sending_domains::site_id)
        .do_update()
        .set((
            sending_domains::id.eq(excluded(sending_domains::id)),
            sending_domains::domain.eq(excluded(sending_domains::domain)),
            sending_domains::dkim_selector.eq(excluded(sending_domains::dkim_selector)),
            sending_domains::dkim_public_key.eq(excluded(sending_domains::dkim_public_key)),
            sending_domains::dkim_private_key.eq(excluded(sending_domains::dkim_private_key)),
            sending_domains::status.eq(PENDING),
            sending_domains::records.eq(json!({})),
            sending_domains::verified_at.eq(None::<DateTime<Utc>>),
            sending_domains::checked_at.eq(None::<DateTime<Utc>>),
            sending_domains::created_at.eq(diesel::dsl::now),
            sending_domains::updated_at.eq(diesel::dsl::now),
        ))
        .returning(SendingDomain::as_returning())
        .get_result(conn)
        .await
}

/// Up to `limit` of the project's domains after `after` (id order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<SendingDomain>> {
    let mut query = sending_domains::table
        .filter(sending_domains::project_id.eq(project_id))
        .order(sending_domains::id)
        .limit(limit)
        .select(SendingDomain::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(sending_domains::id.gt(after));
    }
    query.load(conn).await
}

/// The project's domain `id`.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<SendingDomain>> {
    sending_domains::table
        .filter(sending_domains::project_id.eq(project_id))
        .filter(sending_domains::id.eq(id))
        .select(SendingDomain::as_select())
        .first(conn)
        .await
        .optional()
}

/// The project's domain `id`, locked until the transaction ends.
pub async fn lock(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<SendingDomain>> {
    sending_domains::table
        .filter(sending_domains::project_id.eq(project_id))
        .filter(sending_domains::id.eq(id))
        .select(SendingDomain::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Records a check: the records found, the new status, and `verified_at` set when it becomes
/// verified.
pub async fn record_check(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: &str,
    records: &Value,
) -> QueryResult<SendingDomain> {
    let becomes_verified = status == VERIFIED;
    diesel::update(
        sending_domains::table
            .filter(sending_domains::project_id.eq(project_id))
            .filter(sending_domains::id.eq(id)),
    )
    .set((
        sending_domains::status.eq(status),
        sending_domains::records.eq(records),
        sending_domains::checked_at.eq(diesel::dsl::now),
        sending_domains::updated_at.eq(diesel::dsl::now),
        sending_domains::verified_at.eq(diesel::dsl::sql::<
            diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
        >(if becomes_verified {
            "CASE WHEN status = 'verified' THEN verified_at ELSE now() END"
        } else {
            "verified_at"
        })),
    ))
    .returning(SendingDomain::as_returning())
    .get_result(conn)
    .await
}

/// Up to `limit` domains of any project that were verified (or lost), least recently checked
/// first, whose last check is older than `older_than`: (project, id).
pub async fn due_for_check(
    conn: &mut AsyncPgConnection,
    older_than: DateTime<Utc>,
    limit: i64,
) -> QueryResult<Vec<(Uuid, Uuid)>> {
    sending_domains::table
        .filter(sending_domains::status.ne(PENDING))
        .filter(
            sending_domains::checked_at
                .is_null()
                .or(sending_domains::checked_at.lt(older_than)),
        )
        .order(sending_domains::checked_at.asc().nulls_first())
        .limit(limit)
        .select((sending_domains::project_id, sending_domains::id))
        .load(conn)
        .await
}

/// Writes `domain.dns_lost` for `domain` (in the transaction that marks it lost): the domain,
/// its site, which records are gone, and what each record was found to be.
pub async fn dns_lost_event(
    conn: &mut AsyncPgConnection,
    domain: &SendingDomain,
    lost: &[&str],
) -> QueryResult<()> {
    diesel::insert_into(outbound_events::table)
        .values((
            outbound_events::id.eq(Uuid::now_v7()),
            outbound_events::project_id.eq(domain.project_id),
            outbound_events::kind.eq(DOMAIN_DNS_LOST),
            outbound_events::data.eq(json!({
                "domain_id": domain.id,
                "domain": domain.domain,
                "site_id": domain.site_id,
                "lost_records": lost,
                "records": domain.records,
                "detected_at": Utc::now(),
            })),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// The verified own domains of the project's sites among `site_ids`: site → domain.
pub async fn verified_of_sites(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_ids: &[Uuid],
) -> QueryResult<std::collections::HashMap<Uuid, String>> {
    let rows: Vec<(Uuid, String)> = sending_domains::table
        .filter(sending_domains::project_id.eq(project_id))
        .filter(sending_domains::site_id.eq_any(site_ids))
        .filter(sending_domains::status.eq(VERIFIED))
        .select((sending_domains::site_id, sending_domains::domain))
        .load(conn)
        .await?;
    Ok(rows.into_iter().collect())
}

/// The domain the project's site sends from: its verified own domain, else `shared`.
pub async fn sending_domain_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    shared: &str,
) -> QueryResult<String> {
    Ok(verified_of_sites(conn, project_id, &[site_id])
        .await?
        .remove(&site_id)
        .unwrap_or_else(|| shared.to_owned()))
}
