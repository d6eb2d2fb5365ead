//! The stored delivery policy of a site: its send window and blackout dates
//! (`site_send_policies`) and its warmup (`site_warmups`). No row: no window, no warmup.

use chrono::{DateTime, NaiveDate, NaiveTime, Utc, Weekday};
use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::{site_send_policies, site_warmups};
use crate::domain::send_policy::{SendWindow, SitePolicy, Warmup};

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = site_send_policies)]
pub struct PolicyRow {
    pub site_id: Uuid,
    pub project_id: Uuid,
    pub timezone: String,
    pub window_start: Option<NaiveTime>,
    pub window_end: Option<NaiveTime>,
    /// ISO weekdays, 1 (Monday) to 7.
    pub window_days: Vec<i16>,
    pub blackout_dates: Vec<NaiveDate>,
    pub updated_at: DateTime<Utc>,
}

pub fn weekday(iso: i16) -> Option<Weekday> {
    u8::try_from(iso)
        .ok()
        .filter(|d| (1..=7).contains(d))
        .and_then(|d| Weekday::try_from(d - 1).ok())
}

impl PolicyRow {
    /// The policy it stands for (an unknown zone reads as UTC: the routes accept known ones).
    pub fn policy(&self) -> SitePolicy {
        let window = self
            .window_start
            .zip(self.window_end)
            .map(|(start, end)| SendWindow {
                start,
                end,
                days: self
                    .window_days
                    .iter()
                    .filter_map(|d| weekday(*d))
                    .collect(),
            });
        SitePolicy {
            timezone: self.timezone.parse().unwrap_or(chrono_tz::Tz::UTC),
            window,
            blackout_dates: self.blackout_dates.clone(),
        }
    }
}

pub async fn get_policy(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Option<PolicyRow>> {
    site_send_policies::table
        .filter(site_send_policies::project_id.eq(project_id))
        .filter(site_send_policies::site_id.eq(site_id))
        .select(PolicyRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// Writes the site's policy (the caller checked the site is the project's).
pub async fn put_policy(conn: &mut AsyncPgConnection, row: &PolicyRow) -> QueryResult<PolicyRow> {
    diesel::insert_into(site_send_policies::table)
        .values(row)
        .on_conflict(site_send_policies::site_id)
        .do_update()
        .set(row)
        .returning(PolicyRow::as_returning())
        .get_result(conn)
        .await
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = site_warmups)]
pub struct WarmupRow {
    pub site_id: Uuid,
    pub project_id: Uuid,
    pub enabled: bool,
    pub daily_limits: Vec<i32>,
    pub started_on: NaiveDate,
    pub paused_on: Option<NaiveDate>,
    pub paused_days: i32,
    pub provider_daily_cap: Option<i32>,
    pub updated_at: DateTime<Utc>,
}

impl WarmupRow {
    pub fn warmup(&self) -> Warmup {
        Warmup {
            enabled: self.enabled,
            daily_limits: self.daily_limits.clone(),
            started_on: self.started_on,
            paused_on: self.paused_on,
            paused_days: self.paused_days,
            provider_daily_cap: self.provider_daily_cap,
        }
    }
}

pub async fn get_warmup(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Option<WarmupRow>> {
    site_warmups::table
        .filter(site_warmups::project_id.eq(project_id))
        .filter(site_warmups::site_id.eq(site_id))
        .select(WarmupRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// The warmup row, locked until the caller's transaction ends.
pub async fn lock_warmup(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Option<WarmupRow>> {
    site_warmups::table
        .filter(site_warmups::project_id.eq(project_id))
        .filter(site_warmups::site_id.eq(site_id))
        .select(WarmupRow::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

pub async fn put_warmup(conn: &mut AsyncPgConnection, row: &WarmupRow) -> QueryResult<WarmupRow> {
    diesel::insert_into(site_warmups::table)
        .values(row)
        .on_conflict(site_warmups::site_id)
        .do_update()
        .set((
            site_warmups::enabled.eq(excluded(site_warmups::enabled)),
            site_warmups::daily_limits.eq(excluded(site_warmups::daily_limits)),
            site_warmups::started_on.eq(excluded(site_warmups::started_on)),
            site_warmups::paused_on.eq(excluded(site_warmups::paused_on)),
            site_warmups::paused_days.eq(excluded(site_warmups::paused_days)),
            site_warmups::provider_daily_cap.eq(excluded(site_warmups::provider_daily_cap)),
            site_warmups::updated_at.eq(excluded(site_warmups::updated_at)),
        ))
        .returning(WarmupRow::as_returning())
        .get_result(conn)
        .await
}

/// Campaign emails the site handed to the send worker on its local day `day`.
pub async fn sent_on(
    conn: &mut AsyncPgConnection,
    site_id: Uuid,
    day: NaiveDate,
) -> QueryResult<i64> {
    use super::schema::site_daily_sends;
    let sends: Option<i32> = site_daily_sends::table
        .filter(site_daily_sends::site_id.eq(site_id))
        .filter(site_daily_sends::day.eq(day))
        .select(site_daily_sends::sends)
        .first(conn)
        .await
        .optional()?;
    Ok(sends.map_or(0, i64::from))
}

/// A site's stored policy and warmup, whoever its project (the scheduler's read).
pub async fn of_site(
    conn: &mut AsyncPgConnection,
    site_id: Uuid,
) -> QueryResult<(Option<PolicyRow>, Option<WarmupRow>)> {
    let policy = site_send_policies::table
        .filter(site_send_policies::site_id.eq(site_id))
        .select(PolicyRow::as_select())
        .first(conn)
        .await
        .optional()?;
    let warmup = site_warmups::table
        .filter(site_warmups::site_id.eq(site_id))
        .select(WarmupRow::as_select())
        .first(conn)
        .await
        .optional()?;
    Ok((policy, warmup))
}
