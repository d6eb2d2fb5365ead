//! The abuse monitor's rule: a site's rolling bounce and complaint rates against thresholds.
//! The defaults follow the bulk-sender rules the big mailbox providers publish (complaints
//! under 0.1 %, never 0.3 %; bounces under 2 %): crossing a warning threshold warns, crossing
//! a pause threshold pauses the site's campaign mail, crossing a hard threshold stops its
//! transactional mail too.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where a site stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AbuseState {
    /// Under every warning threshold, or too few sends in the window to judge.
    Ok,
    /// Over a warning threshold: mail flows.
    Warning,
    /// Over a pause threshold: the site's campaign mail is held; transactional mail flows.
    Paused,
    /// Over a hard threshold: campaign and transactional mail are both stopped.
    Suspended,
}

impl AbuseState {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Paused => "paused",
            Self::Suspended => "suspended",
        }
    }

    pub fn parse(name: &str) -> Self {
        match name {
            "warning" => Self::Warning,
            "paused" => Self::Paused,
            "suspended" => Self::Suspended,
            _ => Self::Ok,
        }
    }

    /// Whether the site's campaign mail is held (without an override).
    pub const fn holds_campaigns(self) -> bool {
        matches!(self, Self::Paused | Self::Suspended)
    }
}

/// Thresholds as shares in 0..=1 (`0.003` is 0.3 %).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct Thresholds {
    pub complaint_warn: f64,
    pub complaint_pause: f64,
    pub complaint_hard: f64,
    pub bounce_warn: f64,
    pub bounce_pause: f64,
    pub bounce_hard: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            complaint_warn: 0.001,
            complaint_pause: 0.003,
            complaint_hard: 0.01,
            bounce_warn: 0.02,
            bounce_pause: 0.05,
            bounce_hard: 0.10,
        }
    }
}

impl Thresholds {
    /// Why the thresholds cannot be used, if they cannot: each in (0, 1], warn ≤ pause ≤ hard.
    pub fn problem(&self) -> Option<&'static str> {
        let all = [
            self.complaint_warn,
            self.complaint_pause,
            self.complaint_hard,
            self.bounce_warn,
            self.bounce_pause,
            self.bounce_hard,
        ];
        if all.iter().any(|t| !(*t > 0.0 && *t <= 1.0)) {
            return Some("every threshold must be in (0, 1]");
        }
        if !(self.complaint_warn <= self.complaint_pause
            && self.complaint_pause <= self.complaint_hard
            && self.bounce_warn <= self.bounce_pause
            && self.bounce_pause <= self.bounce_hard)
        {
            return Some(
                "each warn threshold must be at most its pause one, and that at most its hard one",
            );
        }
        None
    }
}

/// What a window's figures put a site in: a rate at or over a threshold crosses it. Fewer
/// than `min_sends` sends say nothing yet (`Ok`).
pub fn evaluate(
    t: &Thresholds,
    min_sends: i64,
    sends: i64,
    bounces: i64,
    complaints: i64,
) -> AbuseState {
    if sends <= 0 || sends < min_sends {
        return AbuseState::Ok;
    }
    let (b, c) = (rate(bounces, sends), rate(complaints, sends));
    if b >= t.bounce_hard || c >= t.complaint_hard {
        AbuseState::Suspended
    } else if b >= t.bounce_pause || c >= t.complaint_pause {
        AbuseState::Paused
    } else if b >= t.bounce_warn || c >= t.complaint_warn {
        AbuseState::Warning
    } else {
        AbuseState::Ok
    }
}

/// `part / whole` (0 when nothing was sent).
pub fn rate(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thresholds_separate_the_states() {
        let t = Thresholds::default();
        assert_eq!(evaluate(&t, 100, 1000, 0, 0), AbuseState::Ok);
        assert_eq!(evaluate(&t, 100, 1000, 0, 1), AbuseState::Warning);
        assert_eq!(evaluate(&t, 100, 1000, 0, 3), AbuseState::Paused);
        assert_eq!(evaluate(&t, 100, 1000, 0, 10), AbuseState::Suspended);
        assert_eq!(evaluate(&t, 100, 1000, 20, 0), AbuseState::Warning);
        assert_eq!(evaluate(&t, 100, 1000, 50, 0), AbuseState::Paused);
        assert_eq!(evaluate(&t, 100, 1000, 100, 0), AbuseState::Suspended);
        // Too few sends to judge.
        assert_eq!(evaluate(&t, 100, 99, 50, 50), AbuseState::Ok);
        assert_eq!(evaluate(&t, 0, 0, 0, 0), AbuseState::Ok);
    }

    #[test]
    fn thresholds_out_of_order_are_refused() {
        assert!(Thresholds::default().problem().is_none());
        let t = Thresholds {
            complaint_pause: 0.0005,
            ..Thresholds::default()
        };
        assert!(t.problem().is_some());
        let t = Thresholds {
            bounce_hard: 1.5,
            ..Thresholds::default()
        };
        assert!(t.problem().is_some());
    }
}
