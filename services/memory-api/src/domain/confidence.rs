//! How far a stored memory can be trusted, for `GET /memory/confidence`.
//!
//! A score in 0..1 from freshness (exponential decay with a half-life per kind) and
//! completeness:
//! - a decision: 0.7 × freshness (half-life 180 days, the age after which decisions count as
//!   stale) + 0.3 when its reasoning is recorded;
//! - a product state: 0.6 × freshness (half-life 30 days: a state describes work in progress)
//!   + 0.4 × the share of the five documented keys it fills.
//!
//! `high` from 0.7, `medium` from 0.4, else `low`.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

const DECISION_HALF_LIFE_DAYS: f64 = 180.0;
const STATE_HALF_LIFE_DAYS: f64 = 30.0;
const DOCUMENTED_STATE_KEYS: [&str; 5] = [
    "status",
    "what_works",
    "what_is_blocked",
    "open_questions",
    "next_session_starts_here",
];

/// 1 now, 0.5 after `half_life_days`, towards 0 after that.
fn freshness(written: DateTime<Utc>, now: DateTime<Utc>, half_life_days: f64) -> f64 {
    let age_days = (now - written).num_seconds().max(0) as f64 / 86_400.0;
    0.5f64.powf(age_days / half_life_days)
}

pub fn decision_score(
    decided_at: DateTime<Utc>,
    reasoning: Option<&str>,
    now: DateTime<Utc>,
) -> f64 {
    let reasoned = reasoning.is_some_and(|r| !r.trim().is_empty());
    round(
        0.7 * freshness(decided_at, now, DECISION_HALF_LIFE_DAYS)
            + if reasoned { 0.3 } else { 0.0 },
    )
}

pub fn state_score(
    updated_at: DateTime<Utc>,
    state: &Map<String, Value>,
    now: DateTime<Utc>,
) -> f64 {
    let filled = DOCUMENTED_STATE_KEYS
        .iter()
        .filter(|k| state.get(**k).is_some_and(is_filled))
        .count();
    round(
        0.6 * freshness(updated_at, now, STATE_HALF_LIFE_DAYS)
            + 0.4 * filled as f64 / DOCUMENTED_STATE_KEYS.len() as f64,
    )
}

fn is_filled(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

fn round(score: f64) -> f64 {
    (score.clamp(0.0, 1.0) * 1000.0).round() / 1000.0
}

/// `high`, `medium` or `low`.
pub fn level(score: f64) -> &'static str {
    if score >= 0.7 {
        "high"
    } else if score >= 0.4 {
        "medium"
    } else {
        "low"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use serde_json::json;

    #[test]
    fn decisions_lose_confidence_with_age_and_gain_it_with_reasoning() {
        let now = Utc::now();
        assert_eq!(decision_score(now, Some("because"), now), 1.0);
        assert_eq!(decision_score(now, None, now), 0.7);
        assert_eq!(decision_score(now, Some("  "), now), 0.7);
        assert_eq!(decision_score(now - Duration::days(180), None, now), 0.35);
        assert_eq!(
            level(decision_score(now - Duration::days(360), Some("x"), now)),
            "medium"
        );
        assert_eq!(
            level(decision_score(now - Duration::days(720), None, now)),
            "low"
        );
    }

    #[test]
    fn states_count_the_documented_keys_they_fill() {
        let now = Utc::now();
        let full = json!({"status": "beta", "what_works": ["a"], "what_is_blocked": "b",
                          "open_questions": ["c"], "next_session_starts_here": "d"});
        assert_eq!(state_score(now, full.as_object().unwrap(), now), 1.0);
        let sparse = json!({"status": "beta", "what_works": [], "other": 1});
        assert_eq!(state_score(now, sparse.as_object().unwrap(), now), 0.68);
        assert_eq!(level(0.68), "medium");
        assert_eq!(
            state_score(now - Duration::days(30), sparse.as_object().unwrap(), now),
            0.38
        );
    }
}
