//! Automations: what makes a contact enter (a trigger) and the steps it then moves through,
//! as the API writes them and the database stores them, and the pure parts of running them
//! (local times in a contact's time zone, annual dates, where a branch leads).

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::segment_schema::SegmentRules;

/// Steps in one automation.
pub const MAX_STEPS: usize = 50;
/// The longest wait: a year.
pub const MAX_WAIT_MINUTES: f64 = 525_600.0;
/// The contact property that holds its IANA time zone (UTC when absent or unknown).
pub const TIMEZONE_PROPERTY: &str = "timezone";
/// The event a confirmed form signup fires (what a `form_submitted` trigger listens to).
pub const FORM_SUBMITTED_EVENT: &str = "form.submitted";

/// What makes a contact enter an automation (once; once a year for a `date` trigger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schema(as = AutomationTrigger)]
pub enum AutomationTrigger {
    /// The contact records the named event (`POST /events`, or an event the service fires).
    Event {
        /// 1..=200 characters, matched exactly.
        #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
        event: String,
    },
    /// The contact holds the tag (looked at on every scheduler pass while active).
    TagAdded {
        /// 1..=100 characters.
        #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
        tag: String,
    },
    /// The contact matches the segment's rules (a segment of the project: 404
    /// `SEGMENT_NOT_FOUND` otherwise).
    SegmentEntry { segment_id: Uuid },
    /// Annual: the month and day of the contact's date property (`YYYY-MM-DD` or `MM-DD`,
    /// e.g. a birthday) is today in the contact's time zone (`properties.timezone`, IANA;
    /// UTC otherwise), from the local time `at` (default 00:00).
    Date {
        /// The property's name, 1..=100 characters: letters, digits, `_` or `-`.
        #[schema(min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9_-]+$")]
        property: String,
        /// Local time of day, `HH:MM` (null or absent: 00:00).
        #[schema(pattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$")]
        at: Option<String>,
    },
    /// A confirmed signup of a form (its `form.submitted` event): of this form, or of any
    /// when `form_id` is null or absent.
    FormSubmitted { form_id: Option<Uuid> },
}

/// What a branch asks about the contact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schema(as = AutomationCondition)]
pub enum AutomationCondition {
    /// The contact matches segment rules (as a segment's `rules`).
    SegmentRules { rules: SegmentRules },
    /// The last email this automation sent the contact was opened.
    OpenedPrevious,
    /// The last email this automation sent the contact was clicked.
    ClickedPrevious,
}

/// One step of an automation. Steps run in order; a branch may skip steps forward (never
/// back), so each step runs at most once per contact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schema(as = AutomationStep)]
pub enum AutomationStep {
    /// Wait a duration.
    Wait {
        /// 0..=525,600 minutes (a year); fractions allowed.
        #[schema(minimum = 0, maximum = 525600)]
        minutes: f64,
    },
    /// Wait until the next time the contact's clock shows `time` (`HH:MM`, in
    /// `properties.timezone`, UTC otherwise); at once when it shows it now.
    WaitUntil {
        #[schema(pattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$")]
        time: String,
    },
    /// Go on with the next step when the condition holds, else skip `else_skip` steps (and
    /// when it holds, skip `then_skip`): skipping past the last step ends the flow.
    Branch {
        condition: AutomationCondition,
        /// Steps skipped when the condition holds, 0..=50 (default 0).
        #[schema(minimum = 0, maximum = 50)]
        then_skip: Option<i32>,
        /// Steps skipped when it does not, 0..=50 (default 1).
        #[schema(minimum = 0, maximum = 50)]
        else_skip: Option<i32>,
    },
    /// Send an email as the automation's site, through the send pipeline (as a campaign
    /// step: `subject`, and `html`, or a `template_id`'s HTML).
    SendEmail {
        /// 1..=998 characters, one line.
        #[schema(min_length = 1, max_length = 998, pattern = r"[^\s\x85\uFEFF]")]
        subject: String,
        /// At most 512,000 characters.
        #[schema(max_length = 512000)]
        html: Option<String>,
        /// At most 512,000 characters.
        #[schema(max_length = 512000)]
        text: Option<String>,
        /// A template of the project (404 `TEMPLATE_NOT_FOUND` otherwise) whose HTML is sent
        /// when `html` is absent.
        template_id: Option<Uuid>,
    },
    /// Add a tag to the contact.
    AddTag {
        #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
        tag: String,
    },
    /// Remove a tag from the contact.
    RemoveTag {
        #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
        tag: String,
    },
    /// Set one of the contact's properties.
    SetProperty {
        /// 1..=100 characters: letters, digits, `_` or `-`.
        #[schema(min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9_-]+$")]
        name: String,
        /// Any JSON value.
        value: Value,
    },
    /// POST `{"type": "automation.step", "created_at", "data"}` to the URL, signed like the
    /// outbound webhooks with the automation's secret; delivered after the step commits,
    /// retried up to 5 times.
    Webhook {
        /// An `http` or `https` URL, at most 2,000 characters; private and loopback targets
        /// are refused when delivered (unless the deployment allows them).
        #[schema(min_length = 8, max_length = 2000, pattern = "^https?://[^ ]+$")]
        url: String,
    },
    /// End the contact's flow here.
    Exit,
}

impl AutomationStep {
    /// The step's kind, as its `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Wait { .. } => "wait",
            Self::WaitUntil { .. } => "wait_until",
            Self::Branch { .. } => "branch",
            Self::SendEmail { .. } => "send_email",
            Self::AddTag { .. } => "add_tag",
            Self::RemoveTag { .. } => "remove_tag",
            Self::SetProperty { .. } => "set_property",
            Self::Webhook { .. } => "webhook",
            Self::Exit => "exit",
        }
    }
}

/// The index of the step after branch `index`, given whether its condition held.
pub fn after_branch(index: usize, step: &AutomationStep, held: bool) -> usize {
    let AutomationStep::Branch {
        then_skip,
        else_skip,
        ..
    } = step
    else {
        return index + 1;
    };
    let skip = if held {
        then_skip.unwrap_or(0)
    } else {
        else_skip.unwrap_or(1)
    };
    index + 1 + usize::try_from(skip.max(0)).unwrap_or(0)
}

/// The contact's time zone: its `timezone` property when it is a known IANA name, else UTC.
pub fn zone_of(properties: &Value) -> Tz {
    properties
        .get(TIMEZONE_PROPERTY)
        .and_then(Value::as_str)
        .and_then(|name| name.parse::<Tz>().ok())
        .unwrap_or(Tz::UTC)
}

/// `HH:MM` read as a time of day (midnight when it is not one).
pub fn time_of(text: Option<&str>) -> NaiveTime {
    text.and_then(|t| NaiveTime::parse_from_str(t, "%H:%M").ok())
        .unwrap_or(NaiveTime::MIN)
}

/// The first instant at or after `now` when the clock of `zone` shows `time`.
pub fn next_local_time(now: DateTime<Utc>, zone: Tz, time: NaiveTime) -> DateTime<Utc> {
    let local_day = now.with_timezone(&zone).date_naive();
    for days in 0..3 {
        let day = local_day + TimeDelta::days(days);
        let at = zone
            .from_local_datetime(&day.and_time(time))
            .earliest()
            // A time the clocks skip (a DST gap): an hour later.
            .or_else(|| {
                zone.from_local_datetime(&(day.and_time(time) + TimeDelta::hours(1)))
                    .earliest()
            });
        if let Some(at) = at {
            let at = at.with_timezone(&Utc);
            if at >= now {
                return at;
            }
        }
    }
    now
}

/// The month and day of a date property (`YYYY-MM-DD`, `MM-DD`, or a longer ISO timestamp).
pub fn month_day(value: &Value) -> Option<(u32, u32)> {
    let text = value.as_str()?;
    let date = text.get(..10).unwrap_or(text);
    if let Ok(d) = NaiveDate::parse_from_str(date, "%Y-%m-%d") {
        return Some((d.month(), d.day()));
    }
    let (m, d) = text.split_once('-')?;
    let (m, d) = (
        m.parse::<u32>().ok()?,
        d.get(..2).unwrap_or(d).parse::<u32>().ok()?,
    );
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then_some((m, d))
}

/// Whether a date trigger fires for a contact now: the property's month and day is the
/// contact's local date and its local time is `at` or later; the occurrence is the local year.
/// A 29 February date fires on 28 February in other years.
pub fn date_occurrence(
    now: DateTime<Utc>,
    zone: Tz,
    value: &Value,
    at: NaiveTime,
) -> Option<String> {
    let (month, day) = month_day(value)?;
    let local = now.with_timezone(&zone);
    let today = local.date_naive();
    let leap = NaiveDate::from_ymd_opt(today.year(), 2, 29).is_some();
    let (month, day) = if (month, day) == (2, 29) && !leap {
        (2, 28)
    } else {
        (month, day)
    };
    (today.month() == month && today.day() == day && local.time() >= at)
        .then(|| today.year().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_birthday_fires_on_the_local_day_from_its_time() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let nine = time_of(Some("09:00"));
        // 23:30 UTC on 1 March is 00:30 on 2 March in Berlin.
        let now = at("2027-03-01T23:30:00Z");
        assert_eq!(
            date_occurrence(now, berlin, &json!("1990-03-02"), NaiveTime::MIN),
            Some("2027".into())
        );
        assert_eq!(
            date_occurrence(now, berlin, &json!("1990-03-02"), nine),
            None
        );
        assert_eq!(
            date_occurrence(now, Tz::UTC, &json!("03-02"), NaiveTime::MIN),
            None
        );
        assert_eq!(
            date_occurrence(now, Tz::UTC, &json!("03-01"), NaiveTime::MIN),
            Some("2027".into())
        );
        assert_eq!(
            date_occurrence(
                at("2027-02-28T12:00:00Z"),
                Tz::UTC,
                &json!("2000-02-29"),
                nine
            ),
            Some("2027".into())
        );
        assert_eq!(
            date_occurrence(now, Tz::UTC, &json!("not a date"), nine),
            None
        );
    }

    #[test]
    fn wait_until_is_the_next_local_time() {
        let tokyo: Tz = "Asia/Tokyo".parse().unwrap();
        let nine = time_of(Some("09:00"));
        // 01:00 UTC is 10:00 in Tokyo: the next 09:00 there is tomorrow, 00:00 UTC.
        assert_eq!(
            next_local_time(at("2027-01-05T01:00:00Z"), tokyo, nine),
            at("2027-01-06T00:00:00Z")
        );
        assert_eq!(
            next_local_time(at("2027-01-05T08:00:00Z"), Tz::UTC, nine),
            at("2027-01-05T09:00:00Z")
        );
        assert_eq!(zone_of(&json!({"timezone": "nowhere"})), Tz::UTC);
    }

    #[test]
    fn branches_skip_forward() {
        let step = AutomationStep::Branch {
            condition: AutomationCondition::OpenedPrevious,
            then_skip: None,
            else_skip: Some(2),
        };
        assert_eq!(after_branch(3, &step, true), 4);
        assert_eq!(after_branch(3, &step, false), 6);
    }
}
