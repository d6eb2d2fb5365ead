//! Where an email of the log stands, and which of those stages allow what.
//!
//! `accepted` (written by `POST /send`) → `queued` (the API answered 202) → `sent`, `failed` or
//! `suppressed` (the worker); after `sent`, tracking and provider events move it to
//! `delivered`, `opened`, `clicked`, `bounced` or `complained`. Campaign mail is written
//! `queued` by the scheduler and waits there for the delivery policy; it is `cancelled` when
//! its enrollment ends before the policy let it go.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The status of an email.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EmailStatus {
    Accepted,
    Queued,
    Sent,
    Delivered,
    Opened,
    Clicked,
    Bounced,
    Complained,
    Failed,
    Suppressed,
    /// Campaign mail whose enrollment ended while the delivery policy held it: never sent.
    Cancelled,
}

impl EmailStatus {
    pub const ALL: [Self; 11] = [
        Self::Accepted,
        Self::Queued,
        Self::Sent,
        Self::Delivered,
        Self::Opened,
        Self::Clicked,
        Self::Bounced,
        Self::Complained,
        Self::Failed,
        Self::Suppressed,
        Self::Cancelled,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Queued => "queued",
            Self::Sent => "sent",
            Self::Delivered => "delivered",
            Self::Opened => "opened",
            Self::Clicked => "clicked",
            Self::Bounced => "bounced",
            Self::Complained => "complained",
            Self::Failed => "failed",
            Self::Suppressed => "suppressed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Not sent yet: a worker may claim it and call the provider.
    pub const fn is_claimable(self) -> bool {
        matches!(self, Self::Accepted | Self::Queued)
    }

    /// Nothing is sent any more: the provider took it, or it never will.
    pub const fn is_final_for_sending(self) -> bool {
        !self.is_claimable()
    }

    /// Reached once the provider accepted the message (later events do not change that the
    /// send succeeded).
    pub const fn is_accepted_by_provider(self) -> bool {
        matches!(
            self,
            Self::Sent
                | Self::Delivered
                | Self::Opened
                | Self::Clicked
                | Self::Bounced
                | Self::Complained
        )
    }

    /// Opens and clicks count from these (the message reached the recipient, as far as known).
    pub const fn counts_engagement(self) -> bool {
        matches!(
            self,
            Self::Sent | Self::Delivered | Self::Opened | Self::Clicked
        )
    }

    /// The statuses for which `holds` is true, as an SQL list: `('a', 'b')`.
    pub fn sql_list(holds: impl Fn(Self) -> bool) -> String {
        let quoted: Vec<String> = Self::ALL
            .into_iter()
            .filter(|s| holds(*s))
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        format!("({})", quoted.join(", "))
    }
}

impl fmt::Display for EmailStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not an email status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatus(pub String);

impl fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not an email status", self.0)
    }
}

impl std::error::Error for UnknownStatus {}

impl FromStr for EmailStatus {
    type Err = UnknownStatus;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| UnknownStatus(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::EmailStatus;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for status in EmailStatus::ALL {
            assert_eq!(status.as_str().parse::<EmailStatus>(), Ok(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(status.as_str())
            );
        }
        assert!("Sent".parse::<EmailStatus>().is_err());
        assert!("unsubscribed".parse::<EmailStatus>().is_err());
    }

    #[test]
    fn every_status_is_either_claimable_or_final() {
        let claimable: Vec<_> = EmailStatus::ALL
            .into_iter()
            .filter(|s| s.is_claimable())
            .collect();
        assert_eq!(claimable, [EmailStatus::Accepted, EmailStatus::Queued]);
        assert!(
            EmailStatus::ALL
                .into_iter()
                .filter(|s| s.is_accepted_by_provider() || s.counts_engagement())
                .all(EmailStatus::is_final_for_sending)
        );
        assert_eq!(
            EmailStatus::sql_list(EmailStatus::is_claimable),
            "('accepted', 'queued')"
        );
    }
}
