//! The time the delivery policy reads (send windows, blackout dates, warmup days, batch
//! minutes): the system's, or in tests a clock that moves only when told
//! (`MAIL_SCHEDULER__FIXED_NOW`, debug builds only).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeDelta, Utc};

#[derive(Debug, Clone, Default)]
pub enum Clock {
    #[default]
    System,
    /// Stands still until [`Clock::set`] or [`Clock::advance`].
    Manual(Arc<Mutex<DateTime<Utc>>>),
}

impl Clock {
    pub fn manual(at: DateTime<Utc>) -> Self {
        Self::Manual(Arc::new(Mutex::new(at)))
    }

    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Self::System => Utc::now(),
            Self::Manual(at) => *at.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Moves a manual clock to `at` (the system clock ignores it).
    pub fn set(&self, at: DateTime<Utc>) {
        if let Self::Manual(now) = self {
            *now.lock().unwrap_or_else(|e| e.into_inner()) = at;
        }
    }

    pub fn advance(&self, by: TimeDelta) {
        self.set(self.now() + by);
    }
}
