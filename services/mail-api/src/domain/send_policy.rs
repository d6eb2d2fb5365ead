//! The delivery policy of campaign mail (ruled): before a campaign email goes to the send
//! worker it waits for the site's send window (local "HH:MM" to "HH:MM" on some weekdays, in
//! the site's IANA time zone), the site's blackout dates (whole local days), the site's warmup
//! cap for the day (the lower of the warmup schedule's and the provider's), the plan's batch
//! size per minute and the plan's monthly quota. Transactional `/send` is held by none of them.
//!
//! Everything here is arithmetic on a given `now`: the scheduler passes its clock's.

use chrono::{
    DateTime, Datelike, Days, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, TimeZone, Timelike,
    Utc, Weekday,
};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Why a campaign email is still `queued`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HoldReason {
    /// Written by the scheduler; the policy looks at it on its next pass.
    Scheduled,
    /// The site sent its warmup cap for the day (local day of its time zone).
    WarmupCap,
    /// The project sent its plan's batch size this minute.
    BatchLimit,
    /// Outside the site's send window.
    SendWindow,
    /// A blackout date of the site.
    BlackoutDate,
    /// The plan's monthly send quota is used up.
    MonthlyQuota,
    /// The campaign is paused; it goes out once the campaign is active again.
    CampaignPaused,
    /// The abuse monitor paused the site's campaigns (its bounce or complaint rate crossed a
    /// pause threshold); it goes out after an override or once the rates recover.
    AbusePaused,
}

impl HoldReason {
    pub const ALL: [Self; 8] = [
        Self::Scheduled,
        Self::WarmupCap,
        Self::BatchLimit,
        Self::SendWindow,
        Self::BlackoutDate,
        Self::MonthlyQuota,
        Self::CampaignPaused,
        Self::AbusePaused,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::WarmupCap => "warmup_cap",
            Self::BatchLimit => "batch_limit",
            Self::SendWindow => "send_window",
            Self::BlackoutDate => "blackout_date",
            Self::MonthlyQuota => "monthly_quota",
            Self::CampaignPaused => "campaign_paused",
            Self::AbusePaused => "abuse_paused",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// Hours of a day when campaign mail of a site may leave, on some weekdays. `start` after
/// `end` runs overnight (into the next day); `start` equal to `end` is the whole day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWindow {
    pub start: NaiveTime,
    pub end: NaiveTime,
    /// The weekdays the window opens on.
    pub days: Vec<Weekday>,
}

impl SendWindow {
    fn opens_on(&self, date: NaiveDate) -> bool {
        self.days.contains(&date.weekday())
    }

    fn contains(&self, local: NaiveDateTime) -> bool {
        let (date, time) = (local.date(), local.time());
        if self.start == self.end {
            return self.opens_on(date);
        }
        if self.start < self.end {
            return self.opens_on(date) && self.start <= time && time < self.end;
        }
        // Overnight: tonight's window, or the tail of last night's.
        (self.opens_on(date) && time >= self.start)
            || (time < self.end && date.pred_opt().is_some_and(|d| self.opens_on(d)))
    }
}

/// A site's send window and blackout dates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePolicy {
    pub timezone: Tz,
    pub window: Option<SendWindow>,
    pub blackout_dates: Vec<NaiveDate>,
}

impl Default for SitePolicy {
    fn default() -> Self {
        Self {
            timezone: Tz::UTC,
            window: None,
            blackout_dates: Vec::new(),
        }
    }
}

/// How far ahead [`SitePolicy::closed`] looks for the next opening (a year and a week); a
/// policy that never opens in that time is looked at again a day later.
const LOOKAHEAD_DAYS: u64 = 372;

impl SitePolicy {
    pub fn local(&self, at: DateTime<Utc>) -> NaiveDateTime {
        at.with_timezone(&self.timezone).naive_local()
    }

    /// The site's calendar day at `at`.
    pub fn local_date(&self, at: DateTime<Utc>) -> NaiveDate {
        self.local(at).date()
    }

    /// The start of the site's next calendar day after `at`.
    pub fn next_local_midnight(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        let tomorrow = self.local_date(at) + Days::new(1);
        self.instant(tomorrow.and_time(NaiveTime::MIN))
    }

    /// The first instant at or after the local time `local` (a time skipped by a clock change
    /// is taken as the first instant after the gap).
    fn instant(&self, local: NaiveDateTime) -> DateTime<Utc> {
        let mut probe = local;
        for _ in 0..5 {
            if let Some(at) = self.timezone.from_local_datetime(&probe).earliest() {
                return at.with_timezone(&Utc);
            }
            probe += TimeDelta::minutes(30);
        }
        Utc.from_utc_datetime(&local)
    }

    fn blocked_at(&self, at: DateTime<Utc>) -> Option<HoldReason> {
        let local = self.local(at);
        if self.blackout_dates.contains(&local.date()) {
            return Some(HoldReason::BlackoutDate);
        }
        match &self.window {
            Some(window) if !window.contains(local) => Some(HoldReason::SendWindow),
            _ => None,
        }
    }

    /// `None` when campaign mail may leave at `now`; otherwise why not, and the first instant
    /// it may.
    pub fn closed(&self, now: DateTime<Utc>) -> Option<(HoldReason, DateTime<Utc>)> {
        let reason = self.blocked_at(now)?;
        let today = self.local_date(now);
        for offset in 0..LOOKAHEAD_DAYS {
            let date = today + Days::new(offset);
            let mut starts = vec![date.and_time(NaiveTime::MIN)];
            if let Some(window) = &self.window {
                starts.push(date.and_time(window.start));
            }
            for start in starts {
                let at = self.instant(start);
                if at > now && self.blocked_at(at).is_none() {
                    return Some((reason, at));
                }
            }
        }
        Some((reason, now + TimeDelta::days(1)))
    }
}

/// The warmup schedule's daily caps when a site starts warming up without giving its own:
/// 50 emails on day 1, doubling each day to 25,600 on day 10; no cap after that.
pub const DEFAULT_DAILY_LIMITS: [i32; 10] =
    [50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600];

/// A site's warmup: its schedule of daily caps from `started_on` (local days), paused or not,
/// and the provider's daily cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warmup {
    /// Whether the schedule applies (the provider's cap applies either way).
    pub enabled: bool,
    pub daily_limits: Vec<i32>,
    pub started_on: NaiveDate,
    /// Paused since this local day: the schedule stays on that day.
    pub paused_on: Option<NaiveDate>,
    /// Days spent paused before (not counted as schedule days).
    pub paused_days: i32,
    pub provider_daily_cap: Option<i32>,
}

/// Where a warmup stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WarmupState {
    /// No schedule (none set, or turned off): only the provider's cap, if any.
    Off,
    /// The schedule caps each day.
    Warming,
    /// The schedule stays on the day it was paused.
    Paused,
    /// Past the schedule's last day: no cap but the provider's.
    Completed,
}

impl Warmup {
    /// The schedule's day on the local day `today`, from 1.
    pub fn day(&self, today: NaiveDate) -> i64 {
        let until = self.paused_on.unwrap_or(today).min(today);
        let days = (until - self.started_on).num_days() - i64::from(self.paused_days);
        days.max(0) + 1
    }

    pub fn state(&self, today: NaiveDate) -> WarmupState {
        if !self.enabled {
            WarmupState::Off
        } else if self.schedule_cap(today).is_none() {
            WarmupState::Completed
        } else if self.paused_on.is_some() {
            WarmupState::Paused
        } else {
            WarmupState::Warming
        }
    }

    /// The schedule's cap on `today` (`None`: off, or past its end).
    pub fn schedule_cap(&self, today: NaiveDate) -> Option<i64> {
        if !self.enabled {
            return None;
        }
        let index = usize::try_from(self.day(today) - 1).ok()?;
        self.daily_limits.get(index).map(|cap| i64::from(*cap))
    }

    /// Campaign emails the site may send on `today`: the lower of the schedule's cap and the
    /// provider's; `None` is no cap.
    pub fn cap(&self, today: NaiveDate) -> Option<i64> {
        lowest(
            self.schedule_cap(today),
            self.provider_daily_cap.map(i64::from),
        )
    }
}

fn lowest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What each count still allows now (`None`: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Room {
    /// Left of the site's warmup cap today.
    pub warmup: Option<i64>,
    /// Left of the plan's batch size this minute.
    pub batch: Option<i64>,
    /// Left of the plan's monthly quota.
    pub monthly: Option<i64>,
}

/// How many due emails may leave now, and why (and until when) the others wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    /// `i64::MAX`: no limit.
    pub release: i64,
    /// For the emails beyond `release`.
    pub hold: Option<(HoldReason, DateTime<Utc>)>,
}

/// The allowance of a site at `now`, given the room its counts leave.
pub fn allowance(policy: &SitePolicy, now: DateTime<Utc>, room: Room) -> Allowance {
    if let Some(closed) = policy.closed(now) {
        return Allowance {
            release: 0,
            hold: Some(closed),
        };
    }
    let limits = [
        (
            room.warmup,
            HoldReason::WarmupCap,
            policy.next_local_midnight(now),
        ),
        (room.batch, HoldReason::BatchLimit, next_minute(now)),
        (room.monthly, HoldReason::MonthlyQuota, next_month(now)),
    ];
    let binding = limits
        .into_iter()
        .filter_map(|(left, reason, until)| left.map(|left| (left.max(0), reason, until)))
        .min_by_key(|(left, _, _)| *left);
    match binding {
        None => Allowance {
            release: i64::MAX,
            hold: None,
        },
        Some((left, reason, until)) => Allowance {
            release: left,
            hold: Some((reason, until)),
        },
    }
}

/// The minute `at` falls in (the batch counter's key).
pub fn minute_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.with_second(0)
        .and_then(|t| t.with_nanosecond(0))
        .unwrap_or(at)
}

fn next_minute(at: DateTime<Utc>) -> DateTime<Utc> {
    minute_of(at) + TimeDelta::minutes(1)
}

/// The start of the next calendar month (UTC), when the monthly quota starts over.
pub fn next_month(at: DateTime<Utc>) -> DateTime<Utc> {
    let (year, month) = if at.month() == 12 {
        (at.year() + 1, 1)
    } else {
        (at.year(), at.month() + 1)
    };
    NaiveDate::from_ymd_opt(year, month, 1)
        .map(|d| Utc.from_utc_datetime(&d.and_time(NaiveTime::MIN)))
        .unwrap_or(at + TimeDelta::days(31))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn time(h: u32, m: u32) -> NaiveTime {
        NaiveTime::from_hms_opt(h, m, 0).unwrap()
    }

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn weekdays() -> Vec<Weekday> {
        vec![
            Weekday::Mon,
            Weekday::Tue,
            Weekday::Wed,
            Weekday::Thu,
            Weekday::Fri,
        ]
    }

    fn berlin_office_hours() -> SitePolicy {
        SitePolicy {
            timezone: "Europe/Berlin".parse().unwrap(),
            window: Some(SendWindow {
                start: time(9, 0),
                end: time(17, 0),
                days: weekdays(),
            }),
            blackout_dates: vec![date("2026-12-25")],
        }
    }

    #[test]
    fn the_window_is_read_in_the_sites_time_zone() {
        let policy = berlin_office_hours();
        // Wednesday 2026-12-02, 07:30 UTC = 08:30 in Berlin (UTC+1): 30 minutes early.
        assert_eq!(
            policy.closed(at("2026-12-02T07:30:00Z")),
            Some((HoldReason::SendWindow, at("2026-12-02T08:00:00Z")))
        );
        assert_eq!(policy.closed(at("2026-12-02T08:00:00Z")), None);
        assert_eq!(policy.closed(at("2026-12-02T15:59:59Z")), None);
        // Friday after hours: Monday 09:00.
        assert_eq!(
            policy.closed(at("2026-12-04T16:00:00Z")),
            Some((HoldReason::SendWindow, at("2026-12-07T08:00:00Z")))
        );
    }

    #[test]
    fn a_blackout_date_holds_the_whole_local_day() {
        let policy = berlin_office_hours();
        // Christmas is a Friday: blacked out, then the weekend, then Monday 09:00.
        assert_eq!(
            policy.closed(at("2026-12-25T10:00:00Z")),
            Some((HoldReason::BlackoutDate, at("2026-12-28T08:00:00Z")))
        );
        let any_time = SitePolicy {
            timezone: "America/New_York".parse().unwrap(),
            window: None,
            blackout_dates: vec![date("2026-07-04")],
        };
        // 04:00 UTC on the 5th is still the 4th in New York (UTC-4): until its midnight.
        assert_eq!(
            any_time.closed(at("2026-07-05T03:00:00Z")),
            Some((HoldReason::BlackoutDate, at("2026-07-05T04:00:00Z")))
        );
        assert_eq!(any_time.closed(at("2026-07-05T04:00:00Z")), None);
    }

    #[test]
    fn an_overnight_window_runs_into_the_next_day() {
        let policy = SitePolicy {
            timezone: Tz::UTC,
            window: Some(SendWindow {
                start: time(22, 0),
                end: time(2, 0),
                days: vec![Weekday::Sat],
            }),
            blackout_dates: vec![],
        };
        // Saturday 2026-12-05 23:00 and Sunday 01:00 are in; Sunday 02:00 is out.
        assert_eq!(policy.closed(at("2026-12-05T23:00:00Z")), None);
        assert_eq!(policy.closed(at("2026-12-06T01:00:00Z")), None);
        assert_eq!(
            policy.closed(at("2026-12-06T02:00:00Z")),
            Some((HoldReason::SendWindow, at("2026-12-12T22:00:00Z")))
        );
    }

    #[test]
    fn a_window_opening_in_a_skipped_hour_opens_after_the_gap() {
        // Berlin skips 02:00-03:00 on 2026-03-29.
        let policy = SitePolicy {
            timezone: "Europe/Berlin".parse().unwrap(),
            window: Some(SendWindow {
                start: time(2, 30),
                end: time(4, 0),
                days: vec![Weekday::Sun],
            }),
            blackout_dates: vec![],
        };
        assert_eq!(
            policy.closed(at("2026-03-28T12:00:00Z")),
            Some((HoldReason::SendWindow, at("2026-03-29T01:00:00Z")))
        );
    }

    fn warmup() -> Warmup {
        Warmup {
            enabled: true,
            daily_limits: vec![10, 20, 40],
            started_on: date("2026-12-01"),
            paused_on: None,
            paused_days: 0,
            provider_daily_cap: None,
        }
    }

    #[test]
    fn the_warmup_cap_follows_the_schedule_and_the_provider() {
        let mut w = warmup();
        assert_eq!(w.cap(date("2026-12-01")), Some(10));
        assert_eq!(w.cap(date("2026-12-03")), Some(40));
        assert_eq!(w.state(date("2026-12-03")), WarmupState::Warming);
        assert_eq!(w.cap(date("2026-12-04")), None);
        assert_eq!(w.state(date("2026-12-04")), WarmupState::Completed);
        w.provider_daily_cap = Some(15);
        assert_eq!(w.cap(date("2026-12-01")), Some(10));
        assert_eq!(w.cap(date("2026-12-02")), Some(15));
        assert_eq!(w.cap(date("2026-12-09")), Some(15));
        w.enabled = false;
        assert_eq!(w.cap(date("2026-12-01")), Some(15));
        assert_eq!(w.state(date("2026-12-01")), WarmupState::Off);
    }

    #[test]
    fn a_paused_warmup_stays_on_its_day() {
        let mut w = warmup();
        w.paused_on = Some(date("2026-12-02"));
        assert_eq!(w.day(date("2026-12-09")), 2);
        assert_eq!(w.cap(date("2026-12-09")), Some(20));
        assert_eq!(w.state(date("2026-12-09")), WarmupState::Paused);
        // Resumed on the 9th after 7 days paused: the 10th is day 3.
        w.paused_on = None;
        w.paused_days = 7;
        assert_eq!(w.day(date("2026-12-10")), 3);
    }

    #[test]
    fn the_tightest_room_binds_and_says_until_when() {
        let policy = berlin_office_hours();
        let now = at("2026-12-02T10:00:00Z");
        let room = Room {
            warmup: Some(5),
            batch: Some(7),
            monthly: None,
        };
        assert_eq!(
            allowance(&policy, now, room),
            Allowance {
                release: 5,
                hold: Some((HoldReason::WarmupCap, at("2026-12-02T23:00:00Z"))),
            }
        );
        let room = Room {
            warmup: None,
            batch: Some(0),
            monthly: Some(3),
        };
        assert_eq!(
            allowance(&policy, at("2026-12-02T10:00:30Z"), room),
            Allowance {
                release: 0,
                hold: Some((HoldReason::BatchLimit, at("2026-12-02T10:01:00Z"))),
            }
        );
        assert_eq!(
            allowance(&policy, now, Room::default()),
            Allowance {
                release: i64::MAX,
                hold: None
            }
        );
        // Closed wins over any room.
        assert_eq!(
            allowance(&policy, at("2026-12-02T20:00:00Z"), Room::default()).release,
            0
        );
        assert_eq!(
            next_month(at("2026-12-31T23:00:00Z")),
            at("2027-01-01T00:00:00Z")
        );
    }
}
