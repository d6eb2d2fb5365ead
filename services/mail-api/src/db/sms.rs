//! SMS: the project's provider (its token sealed), contacts' numbers and consent, SMS
//! campaigns, the texts (the log and the outbox of `sms.send`) and the texts received.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use secrets::Kek;
use uuid::Uuid;

use super::schema::{
    contact_sites, contact_sms as cs, sms_campaigns as sc, sms_inbound as si, sms_messages as sm,
    sms_providers as sp,
};

// ---- provider

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = sp)]
pub struct SmsProvider {
    pub project_id: Uuid,
    pub provider: String,
    pub account_sid: String,
    pub auth_token_sealed: Vec<u8>,
    pub from_number: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn token_context(project_id: Uuid) -> Vec<u8> {
    format!("mail/project/{project_id}/sms-auth-token").into_bytes()
}

pub fn seal_token(kek: &Kek, project_id: Uuid, token: &str) -> Vec<u8> {
    kek.seal(token.as_bytes(), &token_context(project_id))
}

pub fn open_token(kek: &Kek, project_id: Uuid, sealed: &[u8]) -> anyhow::Result<String> {
    Ok(kek.open_text(sealed, &token_context(project_id))?)
}

pub async fn provider(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<Option<SmsProvider>> {
    sp::table
        .find(project_id)
        .select(SmsProvider::as_select())
        .first(conn)
        .await
        .optional()
}

/// Sets the project's provider (replacing the one it had, keeping its creation time).
pub async fn put_provider(conn: &mut AsyncPgConnection, row: &SmsProvider) -> QueryResult<()> {
    diesel::insert_into(sp::table)
        .values(row)
        .on_conflict(sp::project_id)
        .do_update()
        .set((
            sp::provider.eq(&row.provider),
            sp::account_sid.eq(&row.account_sid),
            sp::auth_token_sealed.eq(&row.auth_token_sealed),
            sp::from_number.eq(&row.from_number),
            sp::updated_at.eq(row.updated_at),
        ))
        .execute(conn)
        .await
        .map(drop)
}

// ---- consent

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = cs)]
pub struct ContactSms {
    pub project_id: Uuid,
    pub contact_id: Uuid,
    pub phone: String,
    pub consent: String,
    pub consent_source: String,
    pub timezone: Option<String>,
    pub updated_at: DateTime<Utc>,
}

pub async fn contact_sms(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
) -> QueryResult<Option<ContactSms>> {
    cs::table
        .find((project_id, contact_id))
        .select(ContactSms::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn upsert_contact_sms(conn: &mut AsyncPgConnection, row: &ContactSms) -> QueryResult<()> {
    diesel::insert_into(cs::table)
        .values(row)
        .on_conflict((cs::project_id, cs::contact_id))
        .do_update()
        .set((
            cs::phone.eq(&row.phone),
            cs::consent.eq(&row.consent),
            cs::consent_source.eq(&row.consent_source),
            cs::timezone.eq(&row.timezone),
            cs::updated_at.eq(row.updated_at),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Sets the consent of every contact of the project with `phone` (an inbound keyword).
pub async fn set_consent_by_phone(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    phone: &str,
    consent: &str,
) -> QueryResult<usize> {
    diesel::update(
        cs::table
            .filter(cs::project_id.eq(project_id))
            .filter(cs::phone.eq(phone)),
    )
    .set((
        cs::consent.eq(consent),
        cs::consent_source.eq("inbound"),
        cs::updated_at.eq(Utc::now()),
    ))
    .execute(conn)
    .await
}

/// The contact of the project with `phone` whose consent is granted, if any, and whether any
/// contact with that number revoked it (a revocation by text wins).
pub async fn consented_contact_of_phone(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    phone: &str,
) -> QueryResult<Option<ContactSms>> {
    let rows: Vec<ContactSms> = cs::table
        .filter(cs::project_id.eq(project_id))
        .filter(cs::phone.eq(phone))
        .select(ContactSms::as_select())
        .load(conn)
        .await?;
    if rows.iter().any(|r| r.consent != "granted") {
        return Ok(None);
    }
    Ok(rows.into_iter().next())
}

/// Whether `phone` may be texted by the project now: some contact with it consented and none
/// revoked.
pub async fn phone_consented(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    phone: &str,
) -> QueryResult<bool> {
    Ok(consented_contact_of_phone(conn, project_id, phone)
        .await?
        .is_some())
}

/// A subscriber of a site as a campaign sees it: its number and zone when it consented.
#[derive(Debug, Clone, Queryable)]
pub struct Recipient {
    pub contact_id: Uuid,
    pub phone: Option<String>,
    pub consent: Option<String>,
    pub timezone: Option<String>,
}

/// The site's subscribers with their SMS numbers and consent (null when they have none).
pub async fn site_recipients(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Vec<Recipient>> {
    contact_sites::table
        .left_join(
            cs::table.on(cs::contact_id
                .eq(contact_sites::contact_id)
                .and(cs::project_id.eq(project_id))),
        )
        .filter(contact_sites::site_id.eq(site_id))
        .filter(contact_sites::status.eq("subscribed"))
        .order(contact_sites::contact_id)
        .select((
            contact_sites::contact_id,
            cs::phone.nullable(),
            cs::consent.nullable(),
            cs::timezone.nullable(),
        ))
        .load(conn)
        .await
}

// ---- campaigns

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = sc)]
pub struct SmsCampaignRow {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub name: String,
    pub body: String,
    pub recipients: i32,
    pub skipped_no_consent: i32,
    pub created_at: DateTime<Utc>,
}

pub async fn insert_campaign(
    conn: &mut AsyncPgConnection,
    row: &SmsCampaignRow,
) -> QueryResult<()> {
    diesel::insert_into(sc::table)
        .values(row)
        .execute(conn)
        .await
        .map(drop)
}

// ---- messages

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = sm)]
pub struct SmsMessageRow {
    pub id: Uuid,
    pub project_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub to_phone: String,
    pub body: String,
    pub status: String,
    pub reason: Option<String>,
    pub send_after: DateTime<Utc>,
    pub published_at: Option<DateTime<Utc>>,
    pub attempt_started_at: Option<DateTime<Utc>>,
    pub lease_until: Option<DateTime<Utc>>,
    pub provider_sid: Option<String>,
    pub idempotency_key: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Inserts texts; a campaign's text to a contact it already has is skipped. How many were
/// written.
pub async fn insert_messages(
    conn: &mut AsyncPgConnection,
    rows: &[SmsMessageRow],
) -> QueryResult<usize> {
    let mut written = 0;
    for chunk in rows.chunks(1000) {
        written += diesel::insert_into(sm::table)
            .values(chunk)
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
    }
    Ok(written)
}

/// The project's text with `idempotency_key`.
pub async fn message_by_key(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    key: &str,
) -> QueryResult<Option<SmsMessageRow>> {
    sm::table
        .filter(sm::project_id.eq(project_id))
        .filter(sm::idempotency_key.eq(key))
        .select(SmsMessageRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// The project's text `id`, locked for the caller's transaction.
pub async fn lock_message(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<SmsMessageRow>> {
    sm::table
        .filter(sm::project_id.eq(project_id))
        .filter(sm::id.eq(id))
        .select(SmsMessageRow::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

pub async fn message(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<SmsMessageRow>> {
    sm::table
        .filter(sm::project_id.eq(project_id))
        .filter(sm::id.eq(id))
        .select(SmsMessageRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// Filters of the log.
#[derive(Debug, Clone, Default)]
pub struct LogFilter {
    pub campaign_id: Option<Uuid>,
    pub contact_id: Option<Uuid>,
    pub status: Option<String>,
}

pub async fn list_messages(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &LogFilter,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<SmsMessageRow>> {
    let mut query = sm::table
        .filter(sm::project_id.eq(project_id))
        .order(sm::id)
        .limit(limit)
        .select(SmsMessageRow::as_select())
        .into_boxed();
    if let Some(campaign_id) = filter.campaign_id {
        query = query.filter(sm::campaign_id.eq(campaign_id));
    }
    if let Some(contact_id) = filter.contact_id {
        query = query.filter(sm::contact_id.eq(contact_id));
    }
    if let Some(status) = &filter.status {
        query = query.filter(sm::status.eq(status.clone()));
    }
    if let Some(after) = after {
        query = query.filter(sm::id.gt(after));
    }
    query.load(conn).await
}

/// Sets what the worker decided about a text.
pub async fn update_message(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    change: &MessageChange<'_>,
) -> QueryResult<()> {
    diesel::update(sm::table.find(id))
        .set((
            sm::status.eq(change.status),
            sm::reason.eq(change.reason),
            sm::attempt_started_at.eq(change.attempt_started_at),
            sm::lease_until.eq(change.lease_until),
            sm::provider_sid.eq(change.provider_sid),
            sm::updated_at.eq(Utc::now()),
        ))
        .execute(conn)
        .await
        .map(drop)
}

pub struct MessageChange<'a> {
    pub status: &'a str,
    pub reason: Option<&'a str>,
    pub attempt_started_at: Option<DateTime<Utc>>,
    pub lease_until: Option<DateTime<Utc>>,
    pub provider_sid: Option<&'a str>,
}

/// A provider's status callback: the project's text with `sid` moves to `status` (a text
/// already in a final state stays).
pub async fn set_status_by_sid(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    sid: &str,
    status: &str,
    reason: Option<&str>,
) -> QueryResult<usize> {
    diesel::update(
        sm::table
            .filter(sm::project_id.eq(project_id))
            .filter(sm::provider_sid.eq(sid))
            .filter(sm::status.ne_all(["delivered", "undelivered", "failed", "canceled"])),
    )
    .set((
        sm::status.eq(status),
        sm::reason.eq(reason),
        sm::updated_at.eq(Utc::now()),
    ))
    .execute(conn)
    .await
}

/// Due unpublished texts (`FOR UPDATE SKIP LOCKED`): `(id, project id)`.
pub async fn claim_unpublished(
    conn: &mut AsyncPgConnection,
    limit: i64,
) -> QueryResult<Vec<(Uuid, Uuid)>> {
    sm::table
        .filter(sm::published_at.is_null())
        .filter(sm::send_after.le(Utc::now()))
        .order(sm::send_after)
        .limit(limit)
        .select((sm::id, sm::project_id))
        .for_update()
        .skip_locked()
        .load(conn)
        .await
}

pub async fn mark_published(conn: &mut AsyncPgConnection, ids: &[Uuid]) -> QueryResult<()> {
    diesel::update(sm::table.filter(sm::id.eq_any(ids)))
        .set(sm::published_at.eq(Utc::now()))
        .execute(conn)
        .await
        .map(drop)
}

/// Texts of the project in the last `hours` by status.
pub async fn recent_counts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    since: DateTime<Utc>,
) -> QueryResult<Vec<(String, i64)>> {
    sm::table
        .filter(sm::project_id.eq(project_id))
        .filter(sm::created_at.ge(since))
        .group_by(sm::status)
        .select((sm::status, diesel::dsl::count_star()))
        .load(conn)
        .await
}

// ---- inbound

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = si)]
pub struct SmsInboundRow {
    pub id: Uuid,
    pub project_id: Uuid,
    pub message_sid: String,
    pub from_phone: String,
    pub to_phone: String,
    pub body: String,
    pub keyword: Option<String>,
    pub received_at: DateTime<Utc>,
}

/// Records a received text; `false` when the provider had delivered it already.
pub async fn insert_inbound(
    conn: &mut AsyncPgConnection,
    row: &SmsInboundRow,
) -> QueryResult<bool> {
    let n = diesel::insert_into(si::table)
        .values(row)
        .on_conflict((si::project_id, si::message_sid))
        .do_nothing()
        .execute(conn)
        .await?;
    Ok(n == 1)
}

pub async fn list_inbound(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<SmsInboundRow>> {
    let mut query = si::table
        .filter(si::project_id.eq(project_id))
        .order(si::id)
        .limit(limit)
        .select(SmsInboundRow::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(si::id.gt(after));
    }
    query.load(conn).await
}
