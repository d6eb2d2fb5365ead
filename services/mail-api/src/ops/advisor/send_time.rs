//! `suggest_send_time` (`GET /sites/{id}/send-time`): the hour of the week the site's
//! recipients open and click most, from the site's own recorded opens and clicks in its send
//! policy's time zone. Statistics, no model: per contact when the contact has enough history,
//! else the site's, else a stated default.

use chrono::TimeDelta;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::{advisor as db, contacts, send_policy};
use crate::domain::advice::{WeekHistogram, WeekSlot, weekday_name};
use crate::domain::error_code::MailErrorCode;
use crate::flows;

/// Opens and clicks a contact needs for an answer of its own.
pub const CONTACT_MIN_EVENTS: i64 = 5;
/// Opens and clicks a site needs for an answer from its figures.
pub const SITE_MIN_EVENTS: i64 = 20;
/// The window read when none is asked for, in days.
const DAYS_DEFAULT: u32 = 90;
/// The answer without enough history: Tuesday 10:00 local, a common time for newsletters to be
/// opened.
const DEFAULT_SLOT: (u32, u32) = (2, 10);
/// Alternatives listed after the best hour.
const ALTERNATIVES: usize = 3;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SendTimeParams {
    /// A contact of the project: its own best hour when it has at least 5 opens and clicks in
    /// the window (else the site's, said in `basis` and `reason`); 404 `CONTACT_NOT_FOUND`
    /// when it is not a contact of the project.
    pub contact_id: Option<Uuid>,
    /// The window in days up to now, 1..=365 (default 90).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for SendTimeParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        if self.days.is_some_and(|d| !(1..=365).contains(&d)) {
            return Err(ApiError::invalid_field("days", "must be 1..=365"));
        }
        Ok(())
    }
}

/// Whose history the answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendTimeBasis {
    /// The contact's own opens and clicks.
    Contact,
    /// Every open and click of the site's emails.
    Site,
    /// Too little history: a stated default.
    Default,
}

/// `suggest_send_time`'s answer: the hour to send at, and the data behind it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SendTimeSuggestion {
    pub site_id: Uuid,
    /// The contact asked about, if any.
    pub contact_id: Option<Uuid>,
    pub basis: SendTimeBasis,
    /// 1 (Monday) ..= 7 (Sunday), ISO 8601, in `timezone`.
    pub weekday: u32,
    pub weekday_name: String,
    /// 0..=23, in `timezone`: send at the start of this hour.
    pub hour: u32,
    /// The site's send-policy time zone (IANA name).
    pub timezone: String,
    /// Opens and clicks the answer is computed from (0 for `default`).
    pub sample_size: i64,
    /// Of them, in the suggested hour.
    pub slot_events: i64,
    /// Opens and clicks the basis needs: 5 for a contact, 20 for a site.
    pub min_sample: i64,
    /// Opens and clicks of the contact in the window (when one was asked about).
    pub contact_events: Option<i64>,
    /// Opens and clicks of the site in the window.
    pub site_events: i64,
    pub window_days: u32,
    /// The next busiest hours of the basis, busiest first (empty for `default`).
    pub alternatives: Vec<WeekSlot>,
    /// The basis's opens and clicks per weekday, Monday first.
    pub by_weekday: Vec<i64>,
    /// The basis's opens and clicks per hour of the day, 00:00 first.
    pub by_hour: Vec<i64>,
    /// Why this basis, in one sentence.
    pub reason: String,
}

/// The site's (or contact's) best hour to send (`GET /sites/{id}/send-time`,
/// `suggest_send_time`).
pub async fn suggest_send_time(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    params: &SendTimeParams,
) -> Result<SendTimeSuggestion, ApiError> {
    let days = params.days.unwrap_or(DAYS_DEFAULT);
    let since = state.clock.now() - TimeDelta::days(i64::from(days));
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    if let Some(contact_id) = params.contact_id
        && contacts::get(&mut conn, project_id, contact_id)
            .await?
            .is_none()
    {
        return Err(
            ApiError::not_found(format!("contact {contact_id} not found"))
                .with_code(MailErrorCode::ContactNotFound),
        );
    }
    let timezone = send_policy::get_policy(&mut conn, project_id, site_id)
        .await?
        .map(|row| row.policy().timezone.name().to_owned())
        .unwrap_or_else(|| "UTC".to_owned());
    let histogram = |slots: Vec<db::EngagementSlot>| {
        WeekHistogram::of(
            slots
                .into_iter()
                .map(|s| (s.weekday, s.hour, s.opens + s.clicks)),
        )
    };
    let site = histogram(
        db::engagement_slots(&mut conn, project_id, site_id, None, since, &timezone).await?,
    );
    let contact = match params.contact_id {
        Some(contact_id) => Some(histogram(
            db::engagement_slots(
                &mut conn,
                project_id,
                site_id,
                Some(contact_id),
                since,
                &timezone,
            )
            .await?,
        )),
        None => None,
    };
    let contact_events = contact.as_ref().map(WeekHistogram::total);
    let site_events = site.total();
    let (basis, chosen, reason) = match (&contact, contact_events) {
        (Some(c), Some(n)) if n >= CONTACT_MIN_EVENTS => (
            SendTimeBasis::Contact,
            Some(c),
            format!(
                "the contact's own {n} opens and clicks (at least {CONTACT_MIN_EVENTS} needed)"
            ),
        ),
        _ if site_events >= SITE_MIN_EVENTS => (
            SendTimeBasis::Site,
            Some(&site),
            match contact_events {
                Some(n) => format!(
                    "the contact has {n} opens and clicks (under {CONTACT_MIN_EVENTS}): the \
                     site's {site_events} are used"
                ),
                None => format!("the site's {site_events} opens and clicks"),
            },
        ),
        _ => (
            SendTimeBasis::Default,
            None,
            format!(
                "the site has {site_events} opens and clicks in {days} days (under \
                 {SITE_MIN_EVENTS}): a common default, Tuesday 10:00 local time"
            ),
        ),
    };
    let ranked = chosen
        .map(|h| h.busiest(ALTERNATIVES + 1))
        .unwrap_or_default();
    let (weekday, hour, slot_events) = ranked
        .first()
        .map_or((DEFAULT_SLOT.0, DEFAULT_SLOT.1, 0), |s| {
            (s.weekday, s.hour, s.events)
        });
    Ok(SendTimeSuggestion {
        site_id,
        contact_id: params.contact_id,
        basis,
        weekday,
        weekday_name: weekday_name(weekday).to_owned(),
        hour,
        timezone,
        sample_size: chosen.map_or(0, WeekHistogram::total),
        slot_events,
        min_sample: if basis == SendTimeBasis::Contact {
            CONTACT_MIN_EVENTS
        } else {
            SITE_MIN_EVENTS
        },
        contact_events,
        site_events,
        window_days: days,
        alternatives: ranked.into_iter().skip(1).collect(),
        by_weekday: chosen.map_or_else(|| vec![0; 7], WeekHistogram::by_weekday),
        by_hour: chosen.map_or_else(|| vec![0; 24], WeekHistogram::by_hour),
        reason,
    })
}
