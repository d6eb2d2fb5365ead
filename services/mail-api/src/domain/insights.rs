//! The arithmetic of the reports (`/analytics/*`, `/sites/{id}/insights`): the window, rates,
//! the trend against the previous window, the warnings and summary of a site's insights, the
//! ranking of sites and when opens happen. Pure: the same figures always give the same answer.

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::health;

pub const DAYS_DEFAULT: u32 = 30;
/// Groups (campaigns, subjects, tags) with fewer emails sent in the window are not ranked.
pub const MIN_SAMPLE: i64 = 5;
/// Groups shown as best, and as worst.
pub const RANKED: usize = 3;
/// An open rate that fell by more than this share of the previous window's is a warning.
pub const OPEN_RATE_DROP: f64 = 0.25;

/// The reporting window: the `days` days up to now.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct Window {
    /// 1..=365.
    pub days: u32,
    /// Start of the window (inclusive).
    pub from: DateTime<Utc>,
    /// End of the window (exclusive): the time of the request.
    pub to: DateTime<Utc>,
}

impl Window {
    /// `days` was checked against its parameter's documented range (1..=365).
    pub fn of(days: Option<u32>) -> Self {
        let days = days.unwrap_or(DAYS_DEFAULT);
        let to = Utc::now();
        Self {
            days,
            from: to - Duration::days(i64::from(days)),
            to,
        }
    }

    /// From the start of `start` (UTC) to the end of `end` (or now, when absent or later).
    pub fn between(start: NaiveDate, end: Option<NaiveDate>) -> Self {
        let now = Utc::now();
        let from = start.and_time(NaiveTime::MIN).and_utc();
        let to = end
            .and_then(|day| day.succ_opt())
            .map(|day| day.and_time(NaiveTime::MIN).and_utc())
            .map_or(now, |end| end.min(now));
        let days = u32::try_from((to - from).num_days().max(0)).unwrap_or(u32::MAX);
        Self { days, from, to }
    }

    /// The window of the same length just before this one.
    pub fn previous(&self) -> Span {
        let length = self.to - self.from;
        Span {
            from: self.from - length,
            to: self.from,
        }
    }
}

/// `part / whole`, 0 when `whole` is 0.
pub fn rate(part: i64, whole: i64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// How many emails reached each state, with rates over `sent`. A log row's status is its latest
/// state, so an opened email counts as sent, delivered and opened.
#[derive(Debug, Serialize, ToSchema)]
pub struct Delivery {
    /// Emails the provider accepted (status sent or any later state).
    pub sent: i64,
    /// Delivered, opened, clicked or complained.
    pub delivered: i64,
    /// Opened at least once (or clicked).
    pub opened: i64,
    /// Clicked at least once.
    pub clicked: i64,
    pub bounced: i64,
    pub complained: i64,
    /// delivered / sent (0 when nothing was sent); likewise the other rates.
    pub delivery_rate: f64,
    pub open_rate: f64,
    pub click_rate: f64,
    pub bounce_rate: f64,
    pub complaint_rate: f64,
}

/// The counts of [`Delivery`], before its rates.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeliveryCounts {
    pub sent: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub bounced: i64,
    pub complained: i64,
}

impl From<DeliveryCounts> for Delivery {
    fn from(d: DeliveryCounts) -> Self {
        Self {
            delivery_rate: rate(d.delivered, d.sent),
            open_rate: rate(d.opened, d.sent),
            click_rate: rate(d.clicked, d.sent),
            bounce_rate: rate(d.bounced, d.sent),
            complaint_rate: rate(d.complained, d.sent),
            sent: d.sent,
            delivered: d.delivered,
            opened: d.opened,
            clicked: d.clicked,
            bounced: d.bounced,
            complained: d.complained,
        }
    }
}

/// Delivery with the conversions attributed in the window.
#[derive(Debug, Serialize, ToSchema)]
pub struct Figures {
    pub delivery: Delivery,
    /// Conversions attributed (click, open or send rule) in the window.
    pub converted: i64,
    /// converted / delivery.sent (0 when nothing was sent).
    pub conversion_rate: f64,
}

impl Figures {
    pub fn of(delivery: DeliveryCounts, converted: i64) -> Self {
        Self {
            conversion_rate: rate(converted, delivery.sent),
            delivery: delivery.into(),
            converted,
        }
    }
}

// ---- A site's insights -------------------------------------------------------------------

/// A window's start and end.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct Span {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// A figure now and in the previous window.
#[derive(Debug, Serialize, ToSchema)]
pub struct RateChange {
    pub current: f64,
    pub previous: f64,
    /// current − previous.
    pub change: f64,
}

impl RateChange {
    fn of(current: f64, previous: f64) -> Self {
        Self {
            current,
            previous,
            change: current - previous,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CountChange {
    pub current: i64,
    pub previous: i64,
    /// current − previous.
    pub change: i64,
}

/// The window against the one before it, of the same length.
#[derive(Debug, Serialize, ToSchema)]
pub struct Trend {
    pub sent: CountChange,
    pub open_rate: RateChange,
    pub click_rate: RateChange,
    pub bounce_rate: RateChange,
    pub complaint_rate: RateChange,
}

impl Trend {
    pub fn between(now: &Delivery, before: &Delivery) -> Self {
        Self {
            sent: CountChange {
                current: now.sent,
                previous: before.sent,
                change: now.sent - before.sent,
            },
            open_rate: RateChange::of(now.open_rate, before.open_rate),
            click_rate: RateChange::of(now.click_rate, before.click_rate),
            bounce_rate: RateChange::of(now.bounce_rate, before.bounce_rate),
            complaint_rate: RateChange::of(now.complaint_rate, before.complaint_rate),
        }
    }
}

/// A campaign, or the emails outside campaigns sharing a subject.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupPerformance {
    /// The campaign (null for a subject).
    pub campaign_id: Option<Uuid>,
    /// The campaign's name (its id when it was deleted), or the subject.
    pub label: String,
    pub delivery: Delivery,
}

/// Groups ranked best first, at most `2 × RANKED`. Fewer: every group is there, so the better
/// half (at most [`RANKED`]) is best and the rest, worst first, worst. Else `Err` with the
/// best [`RANKED`], the worst to be ranked on their own.
pub fn split_ranked<T>(mut best: Vec<T>) -> Result<(Vec<T>, Vec<T>), Vec<T>> {
    if best.len() < 2 * RANKED {
        let keep = best.len().div_ceil(2).min(RANKED);
        let mut worst = best.split_off(keep);
        worst.reverse();
        return Ok((best, worst));
    }
    best.truncate(RANKED);
    Err(best)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

/// Something the figures say needs attention.
#[derive(Debug, Serialize, ToSchema)]
pub struct InsightWarning {
    /// `BOUNCE_RATE_HIGH`, `COMPLAINT_RATE_HIGH`, `OPEN_RATE_DROPPED` or `NO_SENDS`.
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    /// The figure (a rate in 0..=1; 0 for `NO_SENDS`).
    pub value: f64,
    /// The threshold it crossed.
    pub threshold: f64,
}

fn percent(rate: f64) -> String {
    format!("{:.1} %", rate * 100.0)
}

/// The warnings of a site's window (`now`) against the previous one (`before`), most severe
/// first.
pub fn warnings(now: &Delivery, before: &Delivery, days: u32) -> Vec<InsightWarning> {
    let mut warnings = Vec::new();
    if now.sent == 0 {
        warnings.push(InsightWarning {
            code: "NO_SENDS",
            severity: Severity::Info,
            message: format!("the site sent nothing in the last {days} days"),
            value: 0.0,
            threshold: 0.0,
        });
    }
    for (code, what, value, healthy, critical) in [
        (
            "BOUNCE_RATE_HIGH",
            "bounce rate",
            now.bounce_rate,
            health::BOUNCE_HEALTHY,
            health::BOUNCE_WARNING,
        ),
        (
            "COMPLAINT_RATE_HIGH",
            "complaint rate",
            now.complaint_rate,
            health::COMPLAINT_HEALTHY,
            health::COMPLAINT_WARNING,
        ),
    ] {
        if now.sent > 0 && value >= healthy {
            let (severity, threshold) = if value >= critical {
                (Severity::Critical, critical)
            } else {
                (Severity::Warning, healthy)
            };
            warnings.push(InsightWarning {
                code,
                severity,
                message: format!(
                    "{what} {} is at or over {}: mailbox providers may start filtering the \
                     site's mail",
                    percent(value),
                    percent(threshold)
                ),
                value,
                threshold,
            });
        }
    }
    if now.sent >= MIN_SAMPLE
        && before.sent >= MIN_SAMPLE
        && now.open_rate < before.open_rate * (1.0 - OPEN_RATE_DROP)
    {
        warnings.push(InsightWarning {
            code: "OPEN_RATE_DROPPED",
            severity: Severity::Warning,
            message: format!(
                "open rate fell from {} to {} against the previous {days} days",
                percent(before.open_rate),
                percent(now.open_rate),
            ),
            value: now.open_rate,
            threshold: before.open_rate * (1.0 - OPEN_RATE_DROP),
        });
    }
    warnings.sort_by_key(|w| std::cmp::Reverse(w.severity as u8));
    warnings
}

/// The findings in sentences, most important first: the warnings, the window's volume, and
/// each ranking's best and weakest (`(kind, best, worst)`).
pub fn summary(
    warnings: &[InsightWarning],
    now: &Delivery,
    before: &Delivery,
    days: u32,
    rankings: [(&str, &[GroupPerformance], &[GroupPerformance]); 2],
) -> Vec<String> {
    let mut summary: Vec<String> = warnings.iter().map(|w| w.message.clone()).collect();
    if now.sent > 0 {
        summary.push(format!(
            "{} emails sent in the last {days} days ({} the previous {days}): {} opened, {} \
             clicked",
            now.sent,
            before.sent,
            percent(now.open_rate),
            percent(now.click_rate)
        ));
    }
    for (kind, best, worst) in rankings {
        if let Some(top) = best.first() {
            summary.push(format!(
                "best {kind}: \"{}\" ({} opened over {} sent)",
                top.label,
                percent(top.delivery.open_rate),
                top.delivery.sent
            ));
        }
        if let Some(bottom) = worst.first() {
            summary.push(format!(
                "weakest {kind}: \"{}\" ({} opened over {} sent)",
                bottom.label,
                percent(bottom.delivery.open_rate),
                bottom.delivery.sent
            ));
        }
    }
    summary
}

// ---- Ranking sites -----------------------------------------------------------------------

/// What the sites are ranked by (best first: highest, but lowest for the bounce and
/// complaint rates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RankBy {
    Sent,
    #[default]
    OpenRate,
    ClickRate,
    Converted,
    BounceRate,
    ComplaintRate,
    Subscribers,
    NetGrowth,
}

impl RankBy {
    /// The value a site is ranked by: the higher, the better.
    pub fn key(self, figures: &Figures, subscribers: i64, net_growth: i64) -> f64 {
        let d = &figures.delivery;
        match self {
            Self::Sent => d.sent as f64,
            Self::OpenRate => d.open_rate,
            Self::ClickRate => d.click_rate,
            Self::Converted => figures.converted as f64,
            Self::BounceRate => -d.bounce_rate,
            Self::ComplaintRate => -d.complaint_rate,
            Self::Subscribers => subscribers as f64,
            Self::NetGrowth => net_growth as f64,
        }
    }
}

// ---- When opens happen -------------------------------------------------------------------

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Weekday {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

pub const WEEKDAYS: [Weekday; 7] = [
    Weekday::Monday,
    Weekday::Tuesday,
    Weekday::Wednesday,
    Weekday::Thursday,
    Weekday::Friday,
    Weekday::Saturday,
    Weekday::Sunday,
];

/// Opens by UTC hour (24 counts from 00:00) and by weekday (7 from Monday), from
/// `(hour 0..=23, ISO weekday 1..=7, opens)` slots; slots out of range are left out.
pub fn opens_by_slot(slots: impl IntoIterator<Item = (i32, i32, i64)>) -> (Vec<i64>, Vec<i64>) {
    let mut by_hour = vec![0i64; 24];
    let mut by_weekday = vec![0i64; 7];
    for (hour, weekday, opens) in slots {
        if let Some(h) = usize::try_from(hour).ok().and_then(|h| by_hour.get_mut(h)) {
            *h += opens;
        }
        if let Some(d) = usize::try_from(weekday - 1)
            .ok()
            .and_then(|d| by_weekday.get_mut(d))
        {
            *d += opens;
        }
    }
    (by_hour, by_weekday)
}

/// The index of the largest count (the first on ties), when any is above 0.
pub fn busiest(counts: &[i64]) -> Option<usize> {
    let max = *counts.iter().max()?;
    (max > 0).then(|| counts.iter().position(|&c| c == max))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_slot_is_the_first_largest_above_zero() {
        assert_eq!(busiest(&[0, 0]), None);
        assert_eq!(busiest(&[1, 3, 3]), Some(1));
        assert_eq!(busiest(&[]), None);
    }

    #[test]
    fn fewer_groups_than_both_lists_split_into_halves() {
        assert_eq!(split_ranked(vec![1, 2, 3]), Ok((vec![1, 2], vec![3])));
        assert_eq!(
            split_ranked(vec![1, 2, 3, 4, 5]),
            Ok((vec![1, 2, 3], vec![5, 4]))
        );
        assert_eq!(split_ranked((1..=6).collect()), Err(vec![1, 2, 3]));
    }

    #[test]
    fn opens_fall_into_their_hour_and_weekday() {
        let (hours, days) = opens_by_slot([(0, 1, 2), (23, 7, 3), (24, 8, 9)]);
        assert_eq!((hours[0], hours[23], hours.iter().sum::<i64>()), (2, 3, 5));
        assert_eq!((days[0], days[6], days.iter().sum::<i64>()), (2, 3, 5));
    }
}
