//! Events for the project's outbound webhooks, in order (`outbound_events`): written in the
//! transaction of what they report; the outbound-webhook deliverer sends them.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Uuid as SqlUuid;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use store::Prepared;
use uuid::Uuid;

use super::schema::outbound_events;
use super::sql;

/// `campaign.completed`: a campaign that accepts no new contacts has no enrollment left (or
/// was set `completed`).
pub const CAMPAIGN_COMPLETED: &str = "campaign.completed";

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = outbound_events)]
pub struct OutboundEvent {
    pub id: Uuid,
    pub kind: String,
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

/// Records `campaign.completed` for the campaign: its id, name, site, type, completion time
/// and how its enrollments ended.
pub async fn campaign_completed(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<()> {
    diesel::sql_query(sql::outbound_events::CAMPAIGN_COMPLETED)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(campaign_id)
        .bind::<SqlUuid, _>(Uuid::now_v7())
        .execute(conn)
        .await?;
    Ok(())
}

/// Records `contact.unsubscribed` (`site_id` null) for the project's contact with the address
/// `email`, if there is one: the contact was unsubscribed from everything while no
/// subscription of it to a site was live. An ended subscription records its own event (the
/// `contact_sites` trigger, `site_id` set), so the caller writes this one only when none ended.
pub async fn contact_unsubscribed_everywhere(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
) -> QueryResult<()> {
    diesel::sql_query(sql::outbound_events::CONTACT_UNSUBSCRIBED_EVERYWHERE)
        .bind::<SqlUuid, _>(project_id)
        .bind::<diesel::sql_types::Text, _>(email)
        .execute(conn)
        .await?;
    Ok(())
}

/// `approval.requested`: an action waits for a person's approval.
pub const APPROVAL_REQUESTED: &str = "approval.requested";
/// `approval.decided`: a person approved or rejected an action.
pub const APPROVAL_DECIDED: &str = "approval.decided";

/// Records an event of `kind` with `data`, in the caller's transaction.
pub async fn record(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    kind: &str,
    data: &Value,
) -> QueryResult<()> {
    diesel::insert_into(outbound_events::table)
        .values((
            outbound_events::id.eq(Uuid::now_v7()),
            outbound_events::project_id.eq(project_id),
            outbound_events::kind.eq(kind),
            outbound_events::data.eq(data),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// The project's events after `after`, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<OutboundEvent>> {
    let mut query = outbound_events::table
        .filter(outbound_events::project_id.eq(project_id))
        .order(outbound_events::id)
        .limit(limit)
        .select(OutboundEvent::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(outbound_events::id.gt(after));
    }
    query.load(conn).await
}

/// `email.bounced` / `email.complained` for one email of the project: the email, its
/// recipient, site and campaign, and what the provider said (`details`: the bounce).
pub async fn email_event(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email_log_id: Uuid,
    kind: &str,
    details: Value,
) -> QueryResult<()> {
    Prepared(
        diesel::sql_query(sql::outbound_events::EMAIL_EVENT)
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(email_log_id)
            .bind::<SqlUuid, _>(Uuid::now_v7())
            .bind::<diesel::sql_types::Text, _>(kind)
            .bind::<diesel::sql_types::Jsonb, _>(details),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// When `bounce_rate.warning` fires.
#[derive(Debug, Clone, Copy)]
pub struct BounceRule {
    /// Hard bounces over sends, above which it fires.
    pub threshold: f64,
    /// Sends in the window below which it never fires.
    pub min_sends: i64,
}

impl Default for BounceRule {
    fn default() -> Self {
        Self {
            threshold: 0.05,
            min_sends: 50,
        }
    }
}

/// Notes a bounce of the site for the bounce-rate watch ([`check_noted_sites`]):
/// one insert, so a burst of bounces of one site never waits on a count of its sends.
pub async fn note_bounce(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<()> {
    Prepared(
        diesel::sql_query("INSERT INTO bounce_rate_pending (project_id, site_id) VALUES ($1, $2)")
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(site_id),
    )
    .execute(conn)
    .await
    .map(drop)
}

#[derive(QueryableByName)]
struct NotedSite {
    #[diesel(sql_type = SqlUuid)]
    project_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    site_id: Uuid,
}

/// What one round of [`check_noted_sites`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BounceRateRound {
    /// Sites whose noted bounces were checked.
    pub sites: usize,
    /// `bounce_rate.warning` events recorded.
    pub warnings: usize,
}

/// Checks the bounce rate of every site with noted bounces, once a site however many were
/// noted. Each site's check is one transaction that takes the site's lock, deletes its noted
/// rows and then counts: every deleted row's bounce was committed before the delete, so the
/// count (a later statement, a later snapshot) sees it; a bounce committed after the delete
/// left its row for the next round.
pub async fn check_noted_sites(
    conn: &mut AsyncPgConnection,
    rule: BounceRule,
) -> QueryResult<BounceRateRound> {
    let sites: Vec<NotedSite> = diesel::sql_query(
        "SELECT DISTINCT project_id, site_id FROM bounce_rate_pending LIMIT 1000",
    )
    .load(conn)
    .await?;
    let mut round = BounceRateRound::default();
    for site in sites {
        let warned = conn
            .transaction(async |conn| {
                lock_site(conn, site.site_id).await?;
                let taken = diesel::sql_query(
                    "DELETE FROM bounce_rate_pending WHERE project_id = $1 AND site_id = $2",
                )
                .bind::<SqlUuid, _>(site.project_id)
                .bind::<SqlUuid, _>(site.site_id)
                .execute(conn)
                .await?;
                if taken == 0 {
                    // Another replica checked it between the list and the lock.
                    return Ok(None);
                }
                check_bounce_rate(conn, site.project_id, site.site_id, rule)
                    .await
                    .map(Some)
            })
            .await?;
        if let Some(warned) = warned {
            round.sites += 1;
            round.warnings += usize::from(warned);
        }
    }
    Ok(round)
}

async fn lock_site(conn: &mut AsyncPgConnection, site_id: Uuid) -> QueryResult<()> {
    diesel::sql_query("SELECT pg_advisory_xact_lock(hashtext('bounce_rate:' || $1::text)::bigint)")
        .bind::<SqlUuid, _>(site_id)
        .execute(conn)
        .await
        .map(drop)
}

/// Records `bounce_rate.warning` for the site when its hard-bounce rate over the last 24 hours
/// passes the rule and no warning for it was recorded this UTC day (the caller holds the site's
/// lock, so two checks at once record one). Soft bounces (`Transient`) do not count. `true`
/// when recorded.
async fn check_bounce_rate(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    rule: BounceRule,
) -> QueryResult<bool> {
    let inserted = diesel::sql_query(sql::outbound_events::CHECK_BOUNCE_RATE)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(site_id)
        .bind::<SqlUuid, _>(Uuid::now_v7())
        .bind::<diesel::sql_types::Double, _>(rule.threshold)
        .bind::<diesel::sql_types::BigInt, _>(rule.min_sends)
        .execute(conn)
        .await?;
    Ok(inserted == 1)
}
