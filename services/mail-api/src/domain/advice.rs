//! The advisor's rules: findings read from delivery figures against stated thresholds, and the
//! busiest hour of the week from a histogram of opens and clicks. Pure: the same figures
//! always give the same answer, and every finding carries the figures behind it.

use serde::Serialize;
use utoipa::ToSchema;

use super::insights::{DeliveryCounts, rate};

/// Below this many emails sent, a campaign, step or site is not judged (a rate over a handful
/// of emails says nothing).
pub const MIN_SENT: i64 = 20;
/// An open rate (opened / sent) under this is low.
pub const LOW_OPEN_RATE: f64 = 0.15;
/// A click rate (clicked / sent) under this is low, once opens are not the problem.
pub const LOW_CLICK_RATE: f64 = 0.01;
/// A step whose unsubscribes (unsubscribed / sent) exceed this loses readers.
pub const HIGH_UNSUBSCRIBE_RATE: f64 = 0.005;
/// A segment whose rules have not changed for this many days may no longer describe anyone
/// current.
pub const STALE_SEGMENT_DAYS: i64 = 90;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingSeverity {
    Info,
    Warning,
    Critical,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingSubject {
    Site,
    Campaign,
    Step,
    Segment,
}

/// A figure against the threshold it was judged by.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Evidence {
    /// What was measured, e.g. `open_rate`.
    pub metric: String,
    /// The measured value (a share in 0..=1 for rates, days for ages).
    pub value: f64,
    /// The threshold it crossed.
    pub threshold: f64,
    /// `below` or `above` the threshold.
    pub comparison: Comparison,
    /// The emails (or items) the value was measured over.
    pub sample_size: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Comparison {
    Below,
    Above,
}

/// One thing the numbers show, with the figures behind it and what to do.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Finding {
    /// A stable name, e.g. `low_open_rate`, `high_unsubscribe_step`, `stale_segment`.
    pub code: String,
    pub severity: FindingSeverity,
    pub subject: FindingSubject,
    /// The site, campaign, step or segment.
    pub subject_id: uuid::Uuid,
    /// Its name (a step: its subject line).
    pub subject_name: String,
    /// What was found, in one sentence with the figures.
    pub message: String,
    pub evidence: Evidence,
    /// What to change.
    pub recommendation: String,
}

/// The thresholds findings are judged by, stated in every answer.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct AdviceThresholds {
    /// Emails sent below which nothing is judged.
    pub min_sent: i64,
    pub low_open_rate: f64,
    pub low_click_rate: f64,
    pub high_unsubscribe_rate: f64,
    /// From the abuse monitor's settings.
    pub bounce_warn: f64,
    /// From the abuse monitor's settings.
    pub complaint_warn: f64,
    pub stale_segment_days: i64,
}

impl AdviceThresholds {
    pub fn new(abuse: &super::abuse::Thresholds) -> Self {
        Self {
            min_sent: MIN_SENT,
            low_open_rate: LOW_OPEN_RATE,
            low_click_rate: LOW_CLICK_RATE,
            high_unsubscribe_rate: HIGH_UNSUBSCRIBE_RATE,
            bounce_warn: abuse.bounce_warn,
            complaint_warn: abuse.complaint_warn,
            stale_segment_days: STALE_SEGMENT_DAYS,
        }
    }
}

/// The thing judged: its kind, id and name.
#[derive(Debug, Clone)]
pub struct Judged {
    pub subject: FindingSubject,
    pub id: uuid::Uuid,
    pub name: String,
}

impl Judged {
    fn finding(
        &self,
        code: &str,
        severity: FindingSeverity,
        message: String,
        evidence: Evidence,
        recommendation: &str,
    ) -> Finding {
        Finding {
            code: code.to_owned(),
            severity,
            subject: self.subject,
            subject_id: self.id,
            subject_name: self.name.clone(),
            message,
            evidence,
            recommendation: recommendation.to_owned(),
        }
    }
}

fn percent(share: f64) -> String {
    format!("{:.2} %", share * 100.0)
}

/// The delivery findings of a site or campaign: low opens, low clicks, bounces and complaints
/// over the warning thresholds. Nothing under [`MIN_SENT`] emails.
pub fn delivery_findings(
    judged: &Judged,
    d: &DeliveryCounts,
    limits: &AdviceThresholds,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if d.sent < limits.min_sent {
        return out;
    }
    let evidence = |metric: &str, value: f64, threshold: f64, comparison| Evidence {
        metric: metric.to_owned(),
        value,
        threshold,
        comparison,
        sample_size: d.sent,
    };
    let complaint_rate = rate(d.complained, d.sent);
    if complaint_rate > limits.complaint_warn {
        out.push(judged.finding(
            "high_complaint_rate",
            FindingSeverity::Critical,
            format!(
                "{} of {} emails were marked as spam ({}), over {}",
                d.complained,
                d.sent,
                percent(complaint_rate),
                percent(limits.complaint_warn)
            ),
            evidence(
                "complaint_rate",
                complaint_rate,
                limits.complaint_warn,
                Comparison::Above,
            ),
            "Send only to contacts who opted in and engaged recently, make the unsubscribe link \
             easy to find, and check that the content matches what they signed up for.",
        ));
    }
    let bounce_rate = rate(d.bounced, d.sent);
    if bounce_rate > limits.bounce_warn {
        out.push(judged.finding(
            "high_bounce_rate",
            FindingSeverity::Critical,
            format!(
                "{} of {} emails bounced ({}), over {}",
                d.bounced,
                d.sent,
                percent(bounce_rate),
                percent(limits.bounce_warn)
            ),
            evidence(
                "bounce_rate",
                bounce_rate,
                limits.bounce_warn,
                Comparison::Above,
            ),
            "Run list hygiene: remove addresses that bounced and contacts not reached in months; \
             confirm new signups (double opt-in).",
        ));
    }
    let open_rate = rate(d.opened, d.sent);
    if open_rate < limits.low_open_rate {
        out.push(judged.finding(
            "low_open_rate",
            FindingSeverity::Warning,
            format!(
                "{} of {} emails were opened ({}), under {}",
                d.opened,
                d.sent,
                percent(open_rate),
                percent(limits.low_open_rate)
            ),
            evidence(
                "open_rate",
                open_rate,
                limits.low_open_rate,
                Comparison::Below,
            ),
            "Test other subject lines (an A/B test), send when the recipients open \
             (suggest_send_time), and leave out contacts who have not opened in months.",
        ));
    } else {
        let click_rate = rate(d.clicked, d.sent);
        if click_rate < limits.low_click_rate {
            out.push(judged.finding(
                "low_click_rate",
                FindingSeverity::Info,
                format!(
                    "{} of {} emails were clicked ({}), under {}, while {} were opened",
                    d.clicked,
                    d.sent,
                    percent(click_rate),
                    percent(limits.low_click_rate),
                    percent(open_rate)
                ),
                evidence(
                    "click_rate",
                    click_rate,
                    limits.low_click_rate,
                    Comparison::Below,
                ),
                "Readers open but do not act: one clear call to action near the top, and links \
                 that match the subject's promise.",
            ));
        }
    }
    out
}

/// The finding of a step that loses readers: its unsubscribes over the threshold.
pub fn unsubscribe_finding(
    judged: &Judged,
    sent: i64,
    unsubscribed: i64,
    limits: &AdviceThresholds,
) -> Option<Finding> {
    let share = rate(unsubscribed, sent);
    (sent >= limits.min_sent && share > limits.high_unsubscribe_rate).then(|| {
        judged.finding(
            "high_unsubscribe_step",
            FindingSeverity::Warning,
            format!(
                "{unsubscribed} of {sent} recipients of this step unsubscribed ({}), over {}",
                percent(share),
                percent(limits.high_unsubscribe_rate)
            ),
            Evidence {
                metric: "unsubscribe_rate".to_owned(),
                value: share,
                threshold: limits.high_unsubscribe_rate,
                comparison: Comparison::Above,
                sample_size: sent,
            },
            "Rework this step (its content, or its delay after the previous one), or end the \
             sequence before it.",
        )
    })
}

/// The finding of a segment whose rules have not changed for `age_days`.
pub fn stale_segment_finding(
    judged: &Judged,
    age_days: i64,
    limits: &AdviceThresholds,
) -> Option<Finding> {
    (age_days >= limits.stale_segment_days).then(|| {
        judged.finding(
            "stale_segment",
            FindingSeverity::Info,
            format!(
                "the segment's rules have not changed for {age_days} days (threshold {} days)",
                limits.stale_segment_days
            ),
            Evidence {
                metric: "days_since_change".to_owned(),
                value: age_days as f64,
                threshold: limits.stale_segment_days as f64,
                comparison: Comparison::Above,
                sample_size: 1,
            },
            "Check that the segment still selects the contacts it was made for (preview it), \
             update its rules or delete it.",
        )
    })
}

/// Findings, the most severe first (stable otherwise).
pub fn by_severity(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    findings
}

/// One hour of the week with the opens and clicks recorded in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct WeekSlot {
    /// 1 (Monday) ..= 7 (Sunday), ISO 8601.
    pub weekday: u32,
    /// 0..=23.
    pub hour: u32,
    /// Opens and clicks recorded in this hour.
    pub events: i64,
}

/// The 168 hours of a week, Monday 00:00 first.
#[derive(Debug, Clone)]
pub struct WeekHistogram {
    counts: [i64; 168],
}

impl WeekHistogram {
    /// From `(weekday 1..=7, hour 0..=23, events)`; slots out of range are left out.
    pub fn of(slots: impl IntoIterator<Item = (i32, i32, i64)>) -> Self {
        let mut counts = [0; 168];
        for (weekday, hour, events) in slots {
            if (1..=7).contains(&weekday) && (0..24).contains(&hour) {
                counts[((weekday - 1) * 24 + hour) as usize] += events;
            }
        }
        Self { counts }
    }

    pub fn total(&self) -> i64 {
        self.counts.iter().sum()
    }

    /// The `n` busiest hours, busiest first (ties: the earlier in the week); empty hours left
    /// out.
    pub fn busiest(&self, n: usize) -> Vec<WeekSlot> {
        let mut slots: Vec<WeekSlot> = (0..168u32)
            .filter(|&i| self.counts[i as usize] > 0)
            .map(|i| WeekSlot {
                weekday: i / 24 + 1,
                hour: i % 24,
                events: self.counts[i as usize],
            })
            .collect();
        slots.sort_by_key(|s| std::cmp::Reverse(s.events));
        slots.truncate(n);
        slots
    }

    /// Events per weekday, Monday first.
    pub fn by_weekday(&self) -> Vec<i64> {
        self.counts.chunks(24).map(|day| day.iter().sum()).collect()
    }

    /// Events per hour of the day, 00:00 first.
    pub fn by_hour(&self) -> Vec<i64> {
        (0..24)
            .map(|h| (0..7).map(|d| self.counts[d * 24 + h]).sum())
            .collect()
    }
}

/// The English name of an ISO weekday (1 = Monday).
pub fn weekday_name(weekday: u32) -> &'static str {
    match weekday {
        1 => "Monday",
        2 => "Tuesday",
        3 => "Wednesday",
        4 => "Thursday",
        5 => "Friday",
        6 => "Saturday",
        _ => "Sunday",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> AdviceThresholds {
        AdviceThresholds::new(&super::super::abuse::Thresholds::default())
    }

    fn site() -> Judged {
        Judged {
            subject: FindingSubject::Site,
            id: uuid::Uuid::nil(),
            name: "news".to_owned(),
        }
    }

    #[test]
    fn too_few_emails_are_not_judged() {
        let d = DeliveryCounts {
            sent: MIN_SENT - 1,
            bounced: MIN_SENT - 1,
            ..DeliveryCounts::default()
        };
        assert!(delivery_findings(&site(), &d, &limits()).is_empty());
    }

    #[test]
    fn low_opens_and_high_bounces_are_found_with_their_figures() {
        let d = DeliveryCounts {
            sent: 100,
            delivered: 90,
            opened: 5,
            bounced: 10,
            ..DeliveryCounts::default()
        };
        let findings = by_severity(delivery_findings(&site(), &d, &limits()));
        let codes: Vec<&str> = findings.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, ["high_bounce_rate", "low_open_rate"]);
        assert_eq!(findings[0].evidence.value, 0.1);
        assert_eq!(findings[1].evidence.sample_size, 100);
    }

    #[test]
    fn the_busiest_hour_of_the_week_wins_and_ties_go_to_the_earlier() {
        let week = WeekHistogram::of([(2, 10, 4), (1, 9, 4), (5, 18, 1), (8, 0, 9)]);
        assert_eq!(week.total(), 9);
        let best = week.busiest(2);
        assert_eq!((best[0].weekday, best[0].hour), (1, 9));
        assert_eq!((best[1].weekday, best[1].hour), (2, 10));
        assert_eq!(week.by_weekday()[1], 4);
        assert_eq!(week.by_hour()[18], 1);
    }
}
