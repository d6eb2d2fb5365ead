//! The abuse monitor's rows: each site's last measure and state (`abuse_monitor`), the
//! overrides people made (`abuse_monitor_overrides`, kept as their audit), and the lease that
//! makes one replica measure per interval (`scheduler_leases`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Double, Integer, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::{abuse_monitor, abuse_monitor_overrides};
use super::sql;
use crate::domain::abuse::AbuseState;

/// Takes the periodic check `name` for this interval: `true` for the one caller (across the
/// replicas) whose transaction found the last run at least `interval_secs` before `now`.
pub async fn take_lease(
    conn: &mut AsyncPgConnection,
    name: &str,
    now: DateTime<Utc>,
    interval_secs: u64,
) -> QueryResult<bool> {
    #[derive(QueryableByName)]
    struct Locked {
        #[diesel(sql_type = Bool)]
        locked: bool,
    }
    let locked: Locked = diesel::sql_query(
        "SELECT pg_try_advisory_xact_lock(hashtextextended('scheduler-lease/' || $1, 0)) \
           AS locked",
    )
    .bind::<Text, _>(name)
    .get_result(conn)
    .await?;
    if !locked.locked {
        return Ok(false);
    }
    let taken = diesel::sql_query(
        "UPDATE scheduler_leases SET last_run_at = $2 \
         WHERE name = $1 AND last_run_at <= $2 - make_interval(secs => $3)",
    )
    .bind::<Text, _>(name)
    .bind::<Timestamptz, _>(now)
    .bind::<Double, _>(interval_secs as f64)
    .execute(conn)
    .await?;
    Ok(taken == 1)
}

/// A site's figures over the window.
#[derive(Debug, Clone, QueryableByName)]
pub struct Measured {
    #[diesel(sql_type = SqlUuid)]
    pub project_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub site_id: Uuid,
    #[diesel(sql_type = BigInt)]
    pub sends: i64,
    #[diesel(sql_type = BigInt)]
    pub bounces: i64,
    #[diesel(sql_type = BigInt)]
    pub complaints: i64,
}

/// Every site's figures over the `days` days up to `now` (sites that sent nothing and are
/// `ok` are left out).
pub async fn measure(
    conn: &mut AsyncPgConnection,
    now: DateTime<Utc>,
    days: u32,
) -> QueryResult<Vec<Measured>> {
    diesel::sql_query(sql::abuse_monitor::MEASURE)
        .bind::<Timestamptz, _>(now)
        .bind::<Integer, _>(i32::try_from(days).unwrap_or(i32::MAX))
        .load(conn)
        .await
}

/// Stores the site's measure and state; answers the state it had before (`Ok` for none).
pub async fn record(
    conn: &mut AsyncPgConnection,
    m: &Measured,
    state: AbuseState,
    now: DateTime<Utc>,
) -> QueryResult<AbuseState> {
    let previous: Option<String> = abuse_monitor::table
        .find(m.site_id)
        .select(abuse_monitor::state)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    let previous = previous
        .as_deref()
        .map_or(AbuseState::Ok, AbuseState::parse);
    diesel::sql_query(
        "INSERT INTO abuse_monitor \
           (site_id, project_id, state, sends, bounces, complaints, checked_at, changed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
         ON CONFLICT (site_id) DO UPDATE SET state = EXCLUDED.state, sends = EXCLUDED.sends, \
           bounces = EXCLUDED.bounces, complaints = EXCLUDED.complaints, \
           checked_at = EXCLUDED.checked_at, \
           changed_at = CASE WHEN abuse_monitor.state = EXCLUDED.state \
                             THEN abuse_monitor.changed_at ELSE EXCLUDED.changed_at END",
    )
    .bind::<SqlUuid, _>(m.site_id)
    .bind::<SqlUuid, _>(m.project_id)
    .bind::<Text, _>(state.as_str())
    .bind::<BigInt, _>(m.sends)
    .bind::<BigInt, _>(m.bounces)
    .bind::<BigInt, _>(m.complaints)
    .bind::<Timestamptz, _>(now)
    .execute(conn)
    .await?;
    Ok(previous)
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = abuse_monitor)]
pub struct MonitorRow {
    pub state: String,
    pub sends: i64,
    pub bounces: i64,
    pub complaints: i64,
    pub checked_at: DateTime<Utc>,
    pub changed_at: DateTime<Utc>,
}

/// The site's last measure, if it was ever measured.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Option<MonitorRow>> {
    abuse_monitor::table
        .filter(abuse_monitor::project_id.eq(project_id))
        .filter(abuse_monitor::site_id.eq(site_id))
        .select(MonitorRow::as_select())
        .first(conn)
        .await
        .optional()
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = abuse_monitor_overrides)]
pub struct OverrideRow {
    pub id: Uuid,
    pub reason: String,
    pub created_by: Uuid,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// Records an override of the site's pause by the key `created_by`, until `expires_at`.
pub async fn insert_override(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    reason: &str,
    created_by: Uuid,
    now: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> QueryResult<OverrideRow> {
    diesel::insert_into(abuse_monitor_overrides::table)
        .values((
            abuse_monitor_overrides::id.eq(Uuid::now_v7()),
            abuse_monitor_overrides::project_id.eq(project_id),
            abuse_monitor_overrides::site_id.eq(site_id),
            abuse_monitor_overrides::reason.eq(reason),
            abuse_monitor_overrides::created_by.eq(created_by),
            abuse_monitor_overrides::created_at.eq(now),
            abuse_monitor_overrides::expires_at.eq(expires_at),
        ))
        .returning(OverrideRow::as_returning())
        .get_result(conn)
        .await
}

/// The site's overrides, newest first (at most `limit`).
pub async fn overrides(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    limit: i64,
) -> QueryResult<Vec<OverrideRow>> {
    abuse_monitor_overrides::table
        .filter(abuse_monitor_overrides::project_id.eq(project_id))
        .filter(abuse_monitor_overrides::site_id.eq(site_id))
        .order(abuse_monitor_overrides::id.desc())
        .limit(limit)
        .select(OverrideRow::as_select())
        .load(conn)
        .await
}

/// Whether the monitor holds the site's mail at `now`: campaign mail when `campaigns`, else
/// transactional mail (the hard threshold only), unless an override is in force. `project_id`,
/// when given, must own the site.
pub async fn holds(
    conn: &mut AsyncPgConnection,
    project_id: Option<Uuid>,
    site_id: Uuid,
    now: DateTime<Utc>,
    campaigns: bool,
) -> QueryResult<bool> {
    #[derive(QueryableByName)]
    struct Held {
        #[diesel(sql_type = Bool)]
        held: bool,
    }
    let held: Held = diesel::sql_query(
        "SELECT EXISTS (SELECT 1 FROM abuse_monitor m \
           WHERE m.site_id = $1 AND ($4::uuid IS NULL OR m.project_id = $4) \
             AND (m.state = 'suspended' OR ($3 AND m.state = 'paused')) \
             AND NOT EXISTS (SELECT 1 FROM abuse_monitor_overrides o \
                              WHERE o.site_id = m.site_id AND o.expires_at > $2)) AS held",
    )
    .bind::<SqlUuid, _>(site_id)
    .bind::<Timestamptz, _>(now)
    .bind::<Bool, _>(campaigns)
    .bind::<diesel::sql_types::Nullable<SqlUuid>, _>(project_id)
    .get_result(conn)
    .await?;
    Ok(held.held)
}

/// The site's campaign mail the monitor held is due again (an override, or the rates fell).
pub async fn release_held(conn: &mut AsyncPgConnection, site_id: Uuid) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE email_log SET hold_reason = 'scheduled', held_until = '-infinity', \
           updated_at = now() \
         WHERE site_id = $1 AND held_until IS NOT NULL AND hold_reason = 'abuse_paused'",
    )
    .bind::<SqlUuid, _>(site_id)
    .execute(conn)
    .await
}
