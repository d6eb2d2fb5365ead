//! The use cases of a site's delivery policy: its send window, blackout dates and warmup.
//!
//! A site's delivery policy for campaign mail (ruled): `GET|PUT /api/v1/sites/{id}/send-policy`
//! (time zone, send window, blackout dates) and its warmup, `GET|PUT
//! /api/v1/sites/{id}/warmup`, `POST /api/v1/sites/{id}/warmup/pause|resume`. Transactional
//! `/send` is held by none of it.

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOfBuilder, Schema, Type};
use uuid::Uuid;

use crate::AppState;
use crate::db::send_policy::{self, PolicyRow, WarmupRow};
use crate::domain::error_code::MailErrorCode;
use crate::domain::send_policy::{DEFAULT_DAILY_LIMITS, SitePolicy, WarmupState};
use crate::flows;

/// A weekday.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Day {
    Mon,
    Tue,
    Wed,
    Thu,
    Fri,
    Sat,
    Sun,
}

impl Day {
    const ALL: [Self; 7] = [
        Self::Mon,
        Self::Tue,
        Self::Wed,
        Self::Thu,
        Self::Fri,
        Self::Sat,
        Self::Sun,
    ];

    /// ISO weekday number, 1 (Monday) to 7.
    fn iso(self) -> i16 {
        Self::ALL
            .iter()
            .position(|d| *d == self)
            .and_then(|i| i16::try_from(i + 1).ok())
            .unwrap_or(1)
    }

    fn of_iso(iso: i16) -> Option<Self> {
        usize::try_from(iso - 1)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }
}

/// The hours campaign mail of the site may leave, in its time zone. `start` after `end` runs
/// overnight (into the next day); `start` equal to `end` is the whole day.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SendWindowSpec {
    /// Local time it opens, "HH:MM" (24-hour).
    #[schema(pattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$")]
    pub start: String,
    /// Local time it closes, "HH:MM" (24-hour).
    #[schema(pattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$")]
    pub end: String,
    /// The weekdays it opens on (an overnight window runs into the next day): 1..=7 of them,
    /// repeats dropped.
    #[schema(min_items = 1, max_items = 7)]
    pub days: Vec<Day>,
}

/// An IANA time zone name (`Europe/Berlin`, `America/New_York`, `UTC`). `x-enum-varnames`
/// names each for client generators, in which `GMT+0` and `GMT-0` would otherwise clash.
fn timezone_schema() -> Schema {
    let names = || chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name());
    let varnames: Vec<String> = names().map(zone_identifier).collect();
    let zone = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(names()))
        .extensions(Some(
            utoipa::openapi::extensions::ExtensionsBuilder::new()
                .add("x-enum-varnames", varnames)
                .build(),
        ))
        .build();
    Schema::OneOf(
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .item(zone)
            .description(Some(
                "An IANA time zone (the tz database's names, `UTC` included; null or absent: \
                 `UTC`); the window and the blackout dates are read in it, and so is the \
                 warmup's day.",
            ))
            .build(),
    )
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PutSendPolicy {
    /// Default `UTC`.
    #[serde(default = "utc")]
    #[schema(schema_with = timezone_schema, required = false)]
    pub timezone: String,
    /// Absent or null: any hour of any day.
    pub send_window: Option<SendWindowSpec>,
    /// Local days campaign mail of the site does not leave at all (at most 366, repeats
    /// dropped).
    #[serde(default)]
    #[schema(required = false, max_items = 366, nullable)]
    pub blackout_dates: Vec<NaiveDate>,
}

/// A zone's name as an identifier: `Etc/GMT+5` → `ETC_GMT_PLUS_5`, `America/Port-au-Prince`
/// → `AMERICA_PORT_AU_PRINCE`.
fn zone_identifier(name: &str) -> String {
    let mut out = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '+' => out.push_str("_PLUS_"),
            '-' if chars.peek().is_some_and(char::is_ascii_digit) => out.push_str("_MINUS_"),
            c if c.is_ascii_alphanumeric() => out.push(c.to_ascii_uppercase()),
            _ => out.push('_'),
        }
    }
    out.split('_')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

fn utc() -> String {
    "UTC".to_owned()
}

impl Validate for PutSendPolicy {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.blackout_dates.sort_unstable();
        self.blackout_dates.dedup();
        if let Some(window) = &mut self.send_window {
            window.days.sort_by_key(|d| d.iso());
            window.days.dedup();
        }
        Ok(())
    }
}

/// A site's send window and blackout dates, and whether campaign mail may leave now.
#[derive(Debug, Serialize, ToSchema)]
pub struct SendPolicyRecord {
    pub site_id: Uuid,
    pub timezone: String,
    /// Null: any hour of any day.
    pub send_window: Option<SendWindowSpec>,
    pub blackout_dates: Vec<NaiveDate>,
    /// Whether campaign mail may leave now (by the window and blackout dates alone).
    pub open_now: bool,
    /// When it may next, while it may not; null when open.
    pub next_opening: Option<DateTime<Utc>>,
    /// Null until a policy is set.
    pub updated_at: Option<DateTime<Utc>>,
}

fn hhmm(time: NaiveTime) -> String {
    time.format("%H:%M").to_string()
}

fn parse_hhmm(field: &str, value: &str) -> Result<NaiveTime, ApiError> {
    NaiveTime::parse_from_str(value, "%H:%M")
        .map_err(|_| ApiError::invalid_field(field, "must be a time, HH:MM"))
}

fn policy_record(site_id: Uuid, row: Option<PolicyRow>, now: DateTime<Utc>) -> SendPolicyRecord {
    let policy = row.as_ref().map(PolicyRow::policy).unwrap_or_default();
    let closed = policy.closed(now);
    let send_window = row.as_ref().and_then(|r| {
        r.window_start
            .zip(r.window_end)
            .map(|(start, end)| SendWindowSpec {
                start: hhmm(start),
                end: hhmm(end),
                days: r
                    .window_days
                    .iter()
                    .filter_map(|d| Day::of_iso(*d))
                    .collect(),
            })
    });
    SendPolicyRecord {
        site_id,
        timezone: row.as_ref().map_or_else(utc, |r| r.timezone.clone()),
        send_window,
        blackout_dates: row
            .as_ref()
            .map(|r| r.blackout_dates.clone())
            .unwrap_or_default(),
        open_now: closed.is_none(),
        next_opening: closed.map(|(_, at)| at),
        updated_at: row.map(|r| r.updated_at),
    }
}

/// The site's policy (`GET /sites/{id}/send-policy`).
pub async fn site_send_policy(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<SendPolicyRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    let row = send_policy::get_policy(&mut conn, project_id, site_id).await?;
    Ok(policy_record(site_id, row, state.clock.now()))
}

/// Sets the site's policy (`PUT /sites/{id}/send-policy`, `update_site`).
pub async fn set_send_policy(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    req: &PutSendPolicy,
) -> Result<SendPolicyRecord, ApiError> {
    let (window_start, window_end, window_days) = match &req.send_window {
        Some(w) => (
            Some(parse_hhmm("send_window.start", &w.start)?),
            Some(parse_hhmm("send_window.end", &w.end)?),
            w.days.iter().map(|d| d.iso()).collect(),
        ),
        None => (None, None, Day::ALL.iter().map(|d| d.iso()).collect()),
    };
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    let row = send_policy::put_policy(
        &mut conn,
        &PolicyRow {
            site_id,
            project_id,
            timezone: req.timezone.clone(),
            window_start,
            window_end,
            window_days,
            blackout_dates: req.blackout_dates.clone(),
            updated_at: Utc::now(),
        },
    )
    .await?;
    Ok(policy_record(site_id, Some(row), state.clock.now()))
}

/// A site's warmup and where it stands today (the site's local day).
#[derive(Debug, Serialize, ToSchema)]
pub struct WarmupStatus {
    pub site_id: Uuid,
    #[schema(inline)]
    pub state: WarmupState,
    /// The schedule's daily caps: day 1, day 2, … (no cap after the last). Empty until a
    /// schedule is set.
    pub daily_limits: Vec<i32>,
    /// The local day the schedule started; null until one is set.
    pub started_on: Option<NaiveDate>,
    /// The schedule's day today (it does not move on while paused); null without a schedule.
    pub day: Option<i64>,
    /// The provider's daily cap, if set.
    pub provider_daily_cap: Option<i32>,
    /// Today's cap: the lower of the schedule's and the provider's; null when neither caps.
    pub cap_today: Option<i64>,
    /// Campaign emails of the site handed to the send worker today.
    pub sent_today: i64,
    /// What is left of today's cap; null when uncapped.
    pub remaining_today: Option<i64>,
    /// The site's local day now (its send policy's time zone).
    pub today: NaiveDate,
    pub timezone: String,
}

/// Where the site's warmup stands now, read on `conn`.
async fn warmup_status(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    now: DateTime<Utc>,
) -> Result<WarmupStatus, ApiError> {
    let policy_row = send_policy::get_policy(conn, project_id, site_id).await?;
    let policy: SitePolicy = policy_row
        .as_ref()
        .map(PolicyRow::policy)
        .unwrap_or_default();
    let today = policy.local_date(now);
    let row = send_policy::get_warmup(conn, project_id, site_id).await?;
    let sent_today = send_policy::sent_on(conn, site_id, today).await?;
    let warmup = row.as_ref().map(WarmupRow::warmup);
    let cap_today = warmup.as_ref().and_then(|w| w.cap(today));
    Ok(WarmupStatus {
        site_id,
        state: warmup.as_ref().map_or(WarmupState::Off, |w| w.state(today)),
        daily_limits: warmup
            .as_ref()
            .map(|w| w.daily_limits.clone())
            .unwrap_or_default(),
        started_on: warmup.as_ref().map(|w| w.started_on),
        day: warmup.as_ref().filter(|w| w.enabled).map(|w| w.day(today)),
        provider_daily_cap: warmup.as_ref().and_then(|w| w.provider_daily_cap),
        cap_today,
        sent_today,
        remaining_today: cap_today.map(|cap| (cap - sent_today).max(0)),
        today,
        timezone: policy.timezone.name().to_owned(),
    })
}

/// The site's warmup (`GET /sites/{id}/warmup`, `get_warmup_status`).
pub async fn get_warmup_status(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<WarmupStatus, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    warmup_status(&mut conn, project_id, site_id, state.clock.now()).await
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PutWarmup {
    /// Default true; false turns the schedule off (the provider's cap still applies).
    #[serde(default = "enabled_default")]
    #[schema(required = false, default = true, nullable)]
    pub enabled: bool,
    #[schema(schema_with = daily_limits_schema)]
    pub daily_limits: Option<Vec<i32>>,
    #[schema(schema_with = started_on_schema)]
    pub started_on: Option<NaiveDate>,
    /// The provider's daily cap (0..=100,000,000); absent or null: none.
    #[schema(minimum = 0, maximum = 100000000)]
    pub provider_daily_cap: Option<i32>,
}

/// The daily caps, day 1 first: 1..=365 days, each 1..=10,000,000.
fn daily_limits_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, SchemaType};
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                    utoipa::openapi::KnownFormat::Int32,
                )))
                .minimum(Some(1))
                .maximum(Some(10_000_000)),
        )
        .min_items(Some(1))
        .max_items(Some(365))
        .description(Some(
            "The daily caps, day 1 first (1..=365 days, each 1..=10,000,000); default 50 \
             doubling to 25,600 on day 10. After the last day the schedule caps nothing.",
        ))
        .build()
}

fn started_on_schema() -> Schema {
    http_kit::request::nullable_format(
        KnownFormat::Date,
        "The local day the schedule starts (day 1); default: the day it started before, else \
         today. Restarting it also ends a pause.",
    )
}

fn enabled_default() -> bool {
    true
}

impl Validate for PutWarmup {}

/// Sets the site's warmup (`PUT /sites/{id}/warmup`, `update_warmup_schedule`).
pub async fn update_warmup_schedule(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    req: &PutWarmup,
) -> Result<WarmupStatus, ApiError> {
    let now = state.clock.now();
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        flows::require_site(conn, project_id, site_id).await?;
        let today = local_today(conn, project_id, site_id, now).await?;
        let existing = send_policy::lock_warmup(conn, project_id, site_id).await?;
        let restarted = req.started_on.is_some();
        let kept = existing.filter(|_| !restarted);
        let row = WarmupRow {
            site_id,
            project_id,
            enabled: req.enabled,
            daily_limits: req
                .daily_limits
                .as_ref()
                .map_or_else(|| DEFAULT_DAILY_LIMITS.to_vec(), Clone::clone),
            started_on: req
                .started_on
                .or(kept.as_ref().map(|w| w.started_on))
                .unwrap_or(today),
            paused_on: kept.as_ref().and_then(|w| w.paused_on),
            paused_days: kept.as_ref().map_or(0, |w| w.paused_days),
            provider_daily_cap: req.provider_daily_cap,
            updated_at: Utc::now(),
        };
        send_policy::put_warmup(conn, &row).await?;
        warmup_status(conn, project_id, site_id, now).await
    })
    .await
}

async fn local_today(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    now: DateTime<Utc>,
) -> Result<NaiveDate, ApiError> {
    let policy = send_policy::get_policy(conn, project_id, site_id).await?;
    Ok(policy
        .as_ref()
        .map(PolicyRow::policy)
        .unwrap_or_default()
        .local_date(now))
}

/// Pauses (`pause`) or resumes the site's warmup schedule (`POST
/// /sites/{id}/warmup/pause|resume`, `pause_warmup`, `resume_warmup`): while paused the
/// schedule stays on its day (the cap does not grow). Doing it twice changes nothing; 409
/// `WARMUP_NOT_ACTIVE` without a schedule that is on.
pub async fn pause_or_resume(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    pause: bool,
) -> Result<WarmupStatus, ApiError> {
    let now = state.clock.now();
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        flows::require_site(conn, project_id, site_id).await?;
        let today = local_today(conn, project_id, site_id, now).await?;
        let Some(mut row) = send_policy::lock_warmup(conn, project_id, site_id)
            .await?
            .filter(|w| w.enabled)
        else {
            return Err(
                ApiError::conflict("the site has no warmup schedule that is on")
                    .with_code(MailErrorCode::WarmupNotActive),
            );
        };
        match (pause, row.paused_on) {
            (true, None) => row.paused_on = Some(today.max(row.started_on)),
            (false, Some(since)) => {
                let days = (today - since).num_days().max(0);
                row.paused_days += i32::try_from(days).unwrap_or(i32::MAX);
                row.paused_on = None;
            }
            _ => {}
        }
        row.updated_at = Utc::now();
        send_policy::put_warmup(conn, &row).await?;
        warmup_status(conn, project_id, site_id, now).await
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::zone_identifier;

    #[test]
    fn every_zone_has_an_identifier_of_its_own() {
        let names: std::collections::BTreeSet<String> = chrono_tz::TZ_VARIANTS
            .iter()
            .map(|tz| zone_identifier(tz.name()))
            .collect();
        assert_eq!(names.len(), chrono_tz::TZ_VARIANTS.len());
        assert_eq!(zone_identifier("Etc/GMT+5"), "ETC_GMT_PLUS_5");
        assert_eq!(zone_identifier("Etc/GMT-14"), "ETC_GMT_MINUS_14");
        assert_eq!(
            zone_identifier("America/Port-au-Prince"),
            "AMERICA_PORT_AU_PRINCE"
        );
    }
}
