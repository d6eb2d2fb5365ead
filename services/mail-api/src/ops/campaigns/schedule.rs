//! What campaigns will send and to whom: a month of sends per day, a site's next sends with
//! its held mail and policy, and a campaign's audience.

use chrono::{DateTime, Months, NaiveDate, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{CampaignStatus, CampaignType, EnrollmentCounts, parse_name};
use crate::AppState;
use crate::db::campaign_schedule::{self, Due};
use crate::db::enrollments;
use crate::domain::send_policy::HoldReason;
use crate::flows;
use crate::ops::send_policy::{
    SendPolicyRecord, WarmupStatus, get_warmup_status, site_send_policy,
};

/// Entries of a site's schedule, at most.
const UPCOMING_MAX: i64 = 100;
/// Contacts in an audience's sample.
const SAMPLE: i64 = 10;

/// Emails of one campaign step due in a period.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduledSend {
    /// The period's start: a UTC day in the calendar, an hour in a site's schedule.
    pub at: DateTime<Utc>,
    pub campaign_id: Uuid,
    pub campaign_name: String,
    pub site_id: Uuid,
    /// The step (null for held mail of a step deleted since).
    pub step_order: Option<i32>,
    pub subject: String,
    pub emails: i64,
}

impl From<Due> for ScheduledSend {
    fn from(d: Due) -> Self {
        Self {
            at: d.at,
            campaign_id: d.campaign_id,
            campaign_name: d.campaign_name,
            site_id: d.site_id,
            step_order: d.step_order,
            subject: d.subject,
            emails: d.emails,
        }
    }
}

/// One day of the calendar.
#[derive(Debug, Serialize, ToSchema)]
pub struct CalendarDay {
    pub date: NaiveDate,
    /// All the day's emails.
    pub emails: i64,
    /// By campaign step.
    pub sends: Vec<ScheduledSend>,
}

/// A month of campaign sends, by UTC day (days with none left out).
#[derive(Debug, Serialize, ToSchema)]
pub struct Calendar {
    pub year: i32,
    pub month: u32,
    pub days: Vec<CalendarDay>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CalendarParams {
    /// Required, 2000..=2100.
    #[param(minimum = 2000, maximum = 2100)]
    pub year: i32,
    /// Required, 1..=12.
    #[param(minimum = 1, maximum = 12)]
    pub month: u32,
}

impl Validate for CalendarParams {}

/// The project's campaign sends in a month (`GET /campaigns/calendar`,
/// `get_campaign_calendar`): each remaining step of each enrollment in progress of an active
/// campaign, and the mail the delivery policy holds, per UTC day, before the policy's windows
/// and caps.
pub async fn campaign_calendar(
    state: &AppState,
    project_id: Uuid,
    params: &CalendarParams,
) -> Result<Calendar, ApiError> {
    let from = NaiveDate::from_ymd_opt(params.year, params.month, 1)
        .ok_or_else(|| ApiError::invalid_field("month", "is not a month"))?;
    let to = from + Months::new(1);
    let mut conn = store::conn(&state.pool).await?;
    let rows = campaign_schedule::by_day(&mut conn, project_id, from, to).await?;
    let mut days: Vec<CalendarDay> = Vec::new();
    for row in rows {
        let date = row.at.date_naive();
        match days.last_mut() {
            Some(day) if day.date == date => {
                day.emails += row.emails;
                day.sends.push(row.into());
            }
            _ => days.push(CalendarDay {
                date,
                emails: row.emails,
                sends: vec![row.into()],
            }),
        }
    }
    Ok(Calendar {
        year: params.year,
        month: params.month,
        days,
    })
}

/// Campaign mail of the site the policy holds now, by reason.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldMail {
    pub reason: HoldReason,
    pub emails: i64,
    /// When the policy looks at the first of them again (null: at its next pass, or, paused,
    /// once the campaign is active again).
    pub next_look: Option<DateTime<Utc>>,
}

/// What a site will send and when.
#[derive(Debug, Serialize, ToSchema)]
pub struct SiteSchedule {
    pub site_id: Uuid,
    /// The delivery policy's time.
    pub now: DateTime<Utc>,
    /// Its send window and blackout dates, and whether they let mail leave now.
    pub send_policy: SendPolicyRecord,
    /// Its warmup cap today and what is left of it.
    pub warmup: WarmupStatus,
    pub held: Vec<HeldMail>,
    /// The next sends (at most 100 entries), per hour, before the policy's windows and caps.
    pub upcoming: Vec<ScheduledSend>,
}

/// The site's schedule (`GET /sites/{id}/schedule`, `get_schedule`).
pub async fn site_schedule(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<SiteSchedule, ApiError> {
    let send_policy = site_send_policy(state, project_id, site_id).await?;
    let warmup = get_warmup_status(state, project_id, site_id).await?;
    let mut conn = store::conn(&state.pool).await?;
    let held = campaign_schedule::held(&mut conn, project_id, site_id)
        .await?
        .into_iter()
        .filter_map(|h| {
            HoldReason::parse(&h.reason).map(|reason| HeldMail {
                reason,
                emails: h.emails,
                next_look: h.next_look,
            })
        })
        .collect();
    let upcoming = campaign_schedule::upcoming(&mut conn, project_id, site_id, UPCOMING_MAX)
        .await?
        .into_iter()
        .map(ScheduledSend::from)
        .collect();
    Ok(SiteSchedule {
        site_id,
        now: state.clock.now(),
        send_policy,
        warmup,
        held,
        upcoming,
    })
}

/// A contact an audience would reach.
#[derive(Debug, Serialize, ToSchema)]
pub struct AudienceMember {
    pub contact_id: Uuid,
    pub email: String,
}

/// Who a campaign reaches.
#[derive(Debug, Serialize, ToSchema)]
pub struct Audience {
    pub campaign_id: Uuid,
    #[serde(rename = "type")]
    pub kind: CampaignType,
    pub status: CampaignStatus,
    pub accepts_new_contacts: bool,
    /// Its enrollments now.
    pub enrollments: EnrollmentCounts,
    /// Contacts subscribed to its site, not suppressed and not enrolled in it now: whom
    /// launching to the site's subscribers (or enrolling them) would add.
    pub eligible: i64,
    /// The first 10 of them.
    pub sample: Vec<AudienceMember>,
    /// Triggered campaigns: contacts that ever recorded the trigger event; null for drip.
    pub triggered_contacts: Option<i64>,
}

/// Who the project's campaign `id` reaches (`GET /campaigns/{id}/audience`,
/// `preview_campaign_audience`).
pub async fn campaign_audience(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Audience, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let campaign = flows::require_campaign(&mut conn, project_id, id).await?;
    let trigger = campaign.trigger_event_name.as_deref();
    let counts = enrollments::counts(&mut conn, project_id, id).await?;
    let figures =
        campaign_schedule::audience(&mut conn, project_id, id, campaign.site_id, trigger).await?;
    let sample =
        campaign_schedule::audience_sample(&mut conn, project_id, id, campaign.site_id, SAMPLE)
            .await?;
    Ok(Audience {
        campaign_id: id,
        kind: parse_name(&campaign.kind)?,
        status: parse_name(&campaign.status)?,
        accepts_new_contacts: campaign.accepts_new_contacts,
        enrollments: counts.into(),
        eligible: figures.eligible,
        sample: sample
            .into_iter()
            .map(|m| AudienceMember {
                contact_id: m.contact_id,
                email: m.email,
            })
            .collect(),
        triggered_contacts: trigger.map(|_| figures.triggered),
    })
}
