//! The advisor and the compound tools: advice read from the project's own figures (send time,
//! campaign and portfolio findings, a delivery diagnosis and recovery plan), each answer with
//! the data and thresholds behind it.

mod assessment;
pub mod briefs;
pub mod diagnosis;
pub mod findings;
pub mod model_advice;
pub mod onboarding;
pub mod recovery;
pub mod send_time;

pub use assessment::{Cause, CauseCode, Fact, ProviderError};
