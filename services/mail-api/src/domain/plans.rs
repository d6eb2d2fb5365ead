//! Plan limits other than rate limits (those are in `rate_limit::policy::mail_quota`).

use rate_limit::policy::Plan;
use serde::Deserialize;

/// Contacts a project of `plan` may hold; `None` is unlimited (ruled).
pub const fn contact_limit(plan: Plan) -> Option<i64> {
    match plan {
        Plan::Free => Some(1_000),
        Plan::Byod => Some(25_000),
        Plan::Managed => Some(100_000),
        Plan::AgencyPlus => Some(500_000),
        Plan::Enterprise => None,
    }
}

/// Free sends 3,000 emails a month (ruled); the other plans' quotas are configured here
/// (`MAIL_PLANS__MONTHLY_SENDS_BYOD`, …), and so is each plan's batch size: the campaign
/// emails a project may hand to the send worker per minute (`MAIL_PLANS__BATCH_PER_MINUTE_FREE`,
/// …). 0 means unlimited.
#[derive(Debug, Clone, Deserialize)]
pub struct SendQuotas {
    pub monthly_sends_byod: u64,
    pub monthly_sends_managed: u64,
    pub monthly_sends_agency_plus: u64,
    pub monthly_sends_enterprise: u64,
    pub batch_per_minute_free: u64,
    pub batch_per_minute_byod: u64,
    pub batch_per_minute_managed: u64,
    pub batch_per_minute_agency_plus: u64,
    pub batch_per_minute_enterprise: u64,
}

pub const FREE_MONTHLY_SENDS: u64 = 3_000;

impl SendQuotas {
    /// Emails a project of `plan` may send per calendar month; `None` is unlimited.
    pub fn monthly_sends(&self, plan: Plan) -> Option<u64> {
        let configured = match plan {
            Plan::Free => return Some(FREE_MONTHLY_SENDS),
            Plan::Byod => self.monthly_sends_byod,
            Plan::Managed => self.monthly_sends_managed,
            Plan::AgencyPlus => self.monthly_sends_agency_plus,
            Plan::Enterprise => self.monthly_sends_enterprise,
        };
        (configured != 0).then_some(configured)
    }

    /// Campaign emails a project of `plan` may release per minute; `None` is unlimited.
    pub fn batch_per_minute(&self, plan: Plan) -> Option<u64> {
        let configured = match plan {
            Plan::Free => self.batch_per_minute_free,
            Plan::Byod => self.batch_per_minute_byod,
            Plan::Managed => self.batch_per_minute_managed,
            Plan::AgencyPlus => self.batch_per_minute_agency_plus,
            Plan::Enterprise => self.batch_per_minute_enterprise,
        };
        (configured != 0).then_some(configured)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contact_limits_are_the_ruled_ones() {
        let table: Vec<_> = Plan::ALL.iter().map(|p| contact_limit(*p)).collect();
        assert_eq!(
            table,
            [
                Some(1_000),
                Some(25_000),
                Some(100_000),
                Some(500_000),
                None
            ]
        );
    }

    #[test]
    fn free_sends_are_fixed_and_zero_is_unlimited() {
        let quotas = SendQuotas {
            monthly_sends_byod: 50_000,
            monthly_sends_managed: 0,
            monthly_sends_agency_plus: 7,
            monthly_sends_enterprise: 0,
            batch_per_minute_free: 100,
            batch_per_minute_byod: 0,
            batch_per_minute_managed: 0,
            batch_per_minute_agency_plus: 0,
            batch_per_minute_enterprise: 0,
        };
        assert_eq!(quotas.monthly_sends(Plan::Free), Some(3_000));
        assert_eq!(quotas.monthly_sends(Plan::Byod), Some(50_000));
        assert_eq!(quotas.monthly_sends(Plan::Managed), None);
        assert_eq!(quotas.monthly_sends(Plan::AgencyPlus), Some(7));
        assert_eq!(quotas.monthly_sends(Plan::Enterprise), None);
        assert_eq!(quotas.batch_per_minute(Plan::Free), Some(100));
        assert_eq!(quotas.batch_per_minute(Plan::Enterprise), None);
    }
}
