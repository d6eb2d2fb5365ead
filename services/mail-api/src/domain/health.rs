//! Sender health: what a window's bounce and complaint rates say about the sender's
//! reputation. The thresholds are the ones mailbox providers publish guidance around (bounces
//! under 2 %, complaints under 0.1 %; 0.3 % complaints is where Gmail and Yahoo start to
//! reject bulk mail).

use serde::Serialize;
use utoipa::ToSchema;

pub const BOUNCE_HEALTHY: f64 = 0.02;
pub const BOUNCE_WARNING: f64 = 0.05;
pub const COMPLAINT_HEALTHY: f64 = 0.001;
pub const COMPLAINT_WARNING: f64 = 0.003;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SenderStatus {
    Healthy,
    Warning,
    Critical,
}

/// The status of rates in 0..=1 (0 and 0 when nothing was sent: healthy).
pub fn sender_status(bounce_rate: f64, complaint_rate: f64) -> SenderStatus {
    if bounce_rate < BOUNCE_HEALTHY && complaint_rate < COMPLAINT_HEALTHY {
        SenderStatus::Healthy
    } else if bounce_rate < BOUNCE_WARNING && complaint_rate < COMPLAINT_WARNING {
        SenderStatus::Warning
    } else {
        SenderStatus::Critical
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_separate_the_statuses() {
        assert_eq!(sender_status(0.0, 0.0), SenderStatus::Healthy);
        assert_eq!(sender_status(0.0199, 0.0009), SenderStatus::Healthy);
        assert_eq!(sender_status(0.02, 0.0), SenderStatus::Warning);
        assert_eq!(sender_status(0.0, 0.001), SenderStatus::Warning);
        assert_eq!(sender_status(0.05, 0.0), SenderStatus::Critical);
        assert_eq!(sender_status(0.01, 0.003), SenderStatus::Critical);
    }
}
