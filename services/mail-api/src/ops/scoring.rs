//! Engagement scoring: a project's rules (`get_scoring_rules`, `update_scoring_rules`: points
//! per kind of engagement, and a half-life after which points count half), each contact's score
//! (kept current by the event path, see [`crate::db::scoring`]; the `score` segment field reads
//! it) and its explanation (`explain_contact_score`: every contribution with its decay).

use chrono::{DateTime, SubsecRound as _, Utc};
use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::scoring::{self, Rules};
use crate::ops::contacts::{ContactKey, find_contact};

/// Points of one kind of engagement: -100..=100.
const MAX_POINTS: i32 = 100;
/// The longest half-life, in days (0 is no decay).
const MAX_HALF_LIFE_DAYS: i32 = 3650;
/// Contributions an explanation lists one by one (the newest); older ones are summed.
pub const LISTED_CONTRIBUTIONS: usize = 500;

/// A project's scoring rules.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScoringRules {
    /// Points for an email opened (once per email).
    pub open_points: i32,
    /// Points for an email clicked (once per email, however many links).
    pub click_points: i32,
    /// Points for each recorded conversion.
    pub conversion_points: i32,
    /// Points for an unsubscribe through an email's link (usually negative).
    pub unsubscribe_points: i32,
    /// Points for an email that bounced (usually negative).
    pub bounce_points: i32,
    /// Points for a spam complaint about an email (usually negative).
    pub complaint_points: i32,
    /// A contribution counts half after so many days, a quarter after twice as many; 0: points
    /// never fade.
    pub half_life_days: i32,
    /// Whether these are the defaults (the project never changed them).
    pub defaults: bool,
    /// When the project last changed them; null for the defaults.
    pub updated_at: Option<DateTime<Utc>>,
}

impl ScoringRules {
    fn new(rules: &Rules, defaults: bool) -> Self {
        Self {
            open_points: rules.open_points,
            click_points: rules.click_points,
            conversion_points: rules.conversion_points,
            unsubscribe_points: rules.unsubscribe_points,
            bounce_points: rules.bounce_points,
            complaint_points: rules.complaint_points,
            half_life_days: rules.half_life_days,
            defaults,
            updated_at: (!defaults).then_some(rules.updated_at),
        }
    }
}

/// The members to change; those left out (or null) keep their value. Unknown members are
/// refused.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpdateScoringRules {
    /// -100..=100.
    #[schema(minimum = -100, maximum = 100)]
    pub open_points: Option<i32>,
    /// -100..=100.
    #[schema(minimum = -100, maximum = 100)]
    pub click_points: Option<i32>,
    /// -100..=100.
    #[schema(minimum = -100, maximum = 100)]
    pub conversion_points: Option<i32>,
    /// -100..=100.
    #[schema(minimum = -100, maximum = 100)]
    pub unsubscribe_points: Option<i32>,
    /// -100..=100.
    #[schema(minimum = -100, maximum = 100)]
    pub bounce_points: Option<i32>,
    /// -100..=100.
    #[schema(minimum = -100, maximum = 100)]
    pub complaint_points: Option<i32>,
    /// 0..=3650 days; 0: points never fade.
    #[schema(minimum = 0, maximum = 3650)]
    pub half_life_days: Option<i32>,
}

impl Validate for UpdateScoringRules {
    fn validate(&mut self) -> Result<(), ApiError> {
        let points = [
            ("open_points", self.open_points),
            ("click_points", self.click_points),
            ("conversion_points", self.conversion_points),
            ("unsubscribe_points", self.unsubscribe_points),
            ("bounce_points", self.bounce_points),
            ("complaint_points", self.complaint_points),
        ];
        for (field, value) in points {
            if value.is_some_and(|v| !(-MAX_POINTS..=MAX_POINTS).contains(&v)) {
                return Err(ApiError::invalid_field(
                    field,
                    &format!("must be between -{MAX_POINTS} and {MAX_POINTS}"),
                ));
            }
        }
        if self
            .half_life_days
            .is_some_and(|d| !(0..=MAX_HALF_LIFE_DAYS).contains(&d))
        {
            return Err(ApiError::invalid_field(
                "half_life_days",
                &format!("must be between 0 and {MAX_HALF_LIFE_DAYS}"),
            ));
        }
        Ok(())
    }
}

/// The project's rules (`GET /scoring-rules`, `get_scoring_rules`).
pub async fn get_scoring_rules(
    state: &AppState,
    project_id: Uuid,
) -> Result<ScoringRules, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    Ok(match scoring::rules(&mut conn, project_id).await? {
        Some(rules) => ScoringRules::new(&rules, false),
        None => ScoringRules::new(&Rules::defaults(project_id), true),
    })
}

/// Changes the project's rules (`PUT /scoring-rules`, `update_scoring_rules`) and rescores
/// every contact by them, in one transaction.
pub async fn update_scoring_rules(
    state: &AppState,
    project_id: Uuid,
    change: &UpdateScoringRules,
) -> Result<ScoringRules, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let rules = conn
        .transaction::<_, ApiError, _>(async |conn| {
            let current = scoring::rules(conn, project_id)
                .await?
                .unwrap_or_else(|| Rules::defaults(project_id));
            // As stored (microseconds), so the answer equals a later read.
            let now = Utc::now().trunc_subsecs(6);
            let rules = Rules {
                project_id,
                open_points: change.open_points.unwrap_or(current.open_points),
                click_points: change.click_points.unwrap_or(current.click_points),
                conversion_points: change
                    .conversion_points
                    .unwrap_or(current.conversion_points),
                unsubscribe_points: change
                    .unsubscribe_points
                    .unwrap_or(current.unsubscribe_points),
                bounce_points: change.bounce_points.unwrap_or(current.bounce_points),
                complaint_points: change.complaint_points.unwrap_or(current.complaint_points),
                half_life_days: change.half_life_days.unwrap_or(current.half_life_days),
                updated_at: now,
            };
            scoring::save_rules(conn, &rules).await?;
            scoring::refresh(conn, &rules, None, now).await?;
            Ok(rules)
        })
        .await?;
    Ok(ScoringRules::new(&rules, false))
}

/// What kind of engagement a contribution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContributionKind {
    Opened,
    Clicked,
    Converted,
    Unsubscribed,
    Bounced,
    Complained,
}

impl ContributionKind {
    fn parse(kind: &str) -> Self {
        match kind {
            "opened" => Self::Opened,
            "clicked" => Self::Clicked,
            "converted" => Self::Converted,
            "unsubscribed" => Self::Unsubscribed,
            "bounced" => Self::Bounced,
            _ => Self::Complained,
        }
    }

    fn points(self, rules: &Rules) -> i32 {
        match self {
            Self::Opened => rules.open_points,
            Self::Clicked => rules.click_points,
            Self::Converted => rules.conversion_points,
            Self::Unsubscribed => rules.unsubscribe_points,
            Self::Bounced => rules.bounce_points,
            Self::Complained => rules.complaint_points,
        }
    }
}

/// One engagement and what it adds to the score now.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreContribution {
    pub kind: ContributionKind,
    pub at: DateTime<Utc>,
    /// The email engaged with (a conversion's attributed email; null when unattributed).
    pub email_log_id: Option<Uuid>,
    /// The conversion, for `converted`.
    pub conversion_id: Option<Uuid>,
    /// The rules' points for the kind.
    pub points: i32,
    /// Its age now, in days.
    pub age_days: f64,
    /// What is left of the points: 0.5 ^ (age / half-life), 1 without decay.
    pub decay: f64,
    /// `points * decay`: what it adds to the score.
    pub contribution: f64,
}

/// The contributions older than the listed ones, summed.
#[derive(Debug, Serialize, ToSchema)]
pub struct OlderContributions {
    pub count: usize,
    pub contribution: f64,
}

/// A contact's score and where it comes from.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreExplanation {
    pub contact_id: Uuid,
    /// The sum of the contributions now (what the `score` segment field compares).
    pub score: f64,
    pub computed_at: DateTime<Utc>,
    /// The rules it was computed by.
    pub rules: ScoringRules,
    /// Every contribution, newest first (at most 500; older ones are summed in `older`).
    pub contributions: Vec<ScoreContribution>,
    /// Null when every contribution is listed.
    pub older: Option<OlderContributions>,
}

/// A contact's score with each contribution (`GET /contacts/{id}/score`,
/// `explain_contact_score`): 404 `CONTACT_NOT_FOUND` for another project's contact.
pub async fn explain_contact_score(
    state: &AppState,
    project_id: Uuid,
    key: &ContactKey,
) -> Result<ScoreExplanation, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let contact = find_contact(&mut conn, project_id, key).await?;
    let stored = scoring::rules(&mut conn, project_id).await?;
    let defaults = stored.is_none();
    let rules = stored.unwrap_or_else(|| Rules::defaults(project_id));
    let rows = scoring::contributions(&mut conn, project_id, contact.id).await?;
    let now = Utc::now();
    let mut contributions: Vec<ScoreContribution> = rows
        .into_iter()
        .map(|row| {
            let kind = ContributionKind::parse(&row.kind);
            let points = kind.points(&rules);
            let age_days = ((now - row.at).num_milliseconds().max(0) as f64) / 86_400_000.0;
            let decay = decay(age_days, rules.half_life_days);
            ScoreContribution {
                kind,
                at: row.at,
                email_log_id: row.email_log_id,
                conversion_id: row.conversion_id,
                points,
                age_days,
                decay,
                contribution: f64::from(points) * decay,
            }
        })
        .collect();
    let score = contributions.iter().map(|c| c.contribution).sum();
    let older = (contributions.len() > LISTED_CONTRIBUTIONS).then(|| {
        let rest = contributions.split_off(LISTED_CONTRIBUTIONS);
        OlderContributions {
            count: rest.len(),
            contribution: rest.iter().map(|c| c.contribution).sum(),
        }
    });
    Ok(ScoreExplanation {
        contact_id: contact.id,
        score,
        computed_at: now,
        rules: ScoringRules::new(&rules, defaults),
        contributions,
        older,
    })
}

/// What is left after `age_days` of points that halve every `half_life_days` (0: all).
fn decay(age_days: f64, half_life_days: i32) -> f64 {
    if half_life_days == 0 {
        1.0
    } else {
        0.5_f64.powf(age_days / f64::from(half_life_days))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_halve_every_half_life() {
        assert_eq!(decay(0.0, 30), 1.0);
        assert!((decay(30.0, 30) - 0.5).abs() < 1e-12);
        assert!((decay(60.0, 30) - 0.25).abs() < 1e-12);
        assert_eq!(decay(1000.0, 0), 1.0);
    }
}
