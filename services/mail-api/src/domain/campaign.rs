//! What a campaign is and how its status may change (ruled: `draft`, `active`, `paused`,
//! `completed`, `archived`; only `active` campaigns enroll and send). The moves:
//!
//! - `draft` → `active` (launch: the campaign needs a step) or `archived`;
//! - `active` → `paused`, `completed` or `archived`;
//! - `paused` → `active`, `completed` or `archived`;
//! - `completed` → `archived`;
//! - `archived` is final.
//!
//! Asking for the status a campaign already has changes nothing. Any other move is refused
//! (409). `completed` and `archived` end the enrollments still in progress; `completed` also
//! fires `campaign.completed`, as does an active campaign that accepts no new contacts once its
//! last enrollment ends.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CampaignType {
    /// A sequence; a site's active drip campaigns are its signup campaigns.
    #[default]
    Drip,
    /// Started by a named event (`trigger_event_name`) fired at `/events`.
    Triggered,
}

impl CampaignType {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Drip => "drip",
            Self::Triggered => "triggered",
        }
    }
}

/// `draft` at creation; `active` campaigns enroll contacts and send; then `paused`,
/// `completed` or `archived`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CampaignStatus {
    Draft,
    Active,
    Paused,
    Completed,
    Archived,
}

impl CampaignStatus {
    pub const ALL: [Self; 5] = [
        Self::Draft,
        Self::Active,
        Self::Paused,
        Self::Completed,
        Self::Archived,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Archived => "archived",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The statuses a campaign in this one may move to.
    pub const fn next(self) -> &'static [Self] {
        match self {
            Self::Draft => &[Self::Active, Self::Archived],
            Self::Active => &[Self::Paused, Self::Completed, Self::Archived],
            Self::Paused => &[Self::Active, Self::Completed, Self::Archived],
            Self::Completed => &[Self::Archived],
            Self::Archived => &[],
        }
    }

    pub fn may_become(self, to: Self) -> bool {
        self.next().contains(&to)
    }

    /// Enrollments still in progress end when a campaign reaches it.
    pub const fn ends_enrollments(self) -> bool {
        matches!(self, Self::Completed | Self::Archived)
    }
}

/// Steps of one campaign, at most.
pub const MAX_STEPS: usize = 50;

/// Longest delay of a step: a year, in minutes.
pub const MAX_DELAY_MINUTES: f64 = 525_600.0;

#[cfg(test)]
mod tests {
    use super::CampaignStatus::{self, *};

    #[test]
    fn the_moves_are_the_documented_ones() {
        let table: Vec<(CampaignStatus, Vec<CampaignStatus>)> = CampaignStatus::ALL
            .into_iter()
            .map(|from| {
                let to = CampaignStatus::ALL
                    .into_iter()
                    .filter(|to| from.may_become(*to))
                    .collect();
                (from, to)
            })
            .collect();
        assert_eq!(
            table,
            [
                (Draft, vec![Active, Archived]),
                (Active, vec![Paused, Completed, Archived]),
                (Paused, vec![Active, Completed, Archived]),
                (Completed, vec![Archived]),
                (Archived, vec![]),
            ]
        );
        for status in CampaignStatus::ALL {
            assert!(
                !status.may_become(status),
                "{status:?} to itself is no move"
            );
            assert_eq!(CampaignStatus::parse(status.as_str()), Some(status));
        }
    }
}
