//! A/B tests of a campaign's first step: 2..=4 variants (subject, HTML, from name), a share of
//! the audience split evenly among them (deterministically, by a hash of the test and the
//! contact), the rest held back until a winner is promoted, by hand or by the decision rule
//! (checked by the campaign scheduler). The statistics are in [`crate::domain::ab_test`].

use chrono::{DateTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::ab_tests::{self as db, AbTest, NewAbTest};
use crate::db::campaign_steps;
use crate::domain::ab_test as stats;
use crate::domain::error_code::MailErrorCode;
use crate::flows;
use crate::ops::idempotency::{Answer, IdempotencyKey, Idempotent};
// Promoting by hand goes through the approval policy: `ops::approvals::gate::promote_ab_winner_gated`.
use crate::ops::input::check_template_syntax;

const ROUTE: &str = "POST /api/v1/ab-tests";

/// What counts as a success of a recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The email was opened (the tracking pixel, or the provider's open event).
    #[default]
    Opens,
    /// A tracked link in it was clicked.
    Clicks,
    /// A conversion was attributed to it.
    Conversions,
}

impl Metric {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Opens => "opens",
            Self::Clicks => "clicks",
            Self::Conversions => "conversions",
        }
    }
}

/// `running` while the test group is being sent and measured; `promoted` once the winner went
/// (or is going) to the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AbTestStatus {
    Running,
    Promoted,
}

/// What a variant changes in the step; a member left out keeps the step's own (`{}` is the
/// step as written, a control). Unknown fields are refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct Variant {
    /// The subject: 1..=998 characters on one line, not blank. Template syntax is checked
    /// (400 `TEMPLATE_SYNTAX`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        required = false,
        min_length = 1,
        max_length = 998,
        pattern = r"^[^\r\n]*[^\s\x85\uFEFF][^\r\n]*$"
    )]
    pub subject: Option<String>,
    /// The HTML: not blank, at most 524,288 characters. Template syntax is checked (400
    /// `TEMPLATE_SYNTAX`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        required = false,
        min_length = 1,
        max_length = 524288,
        pattern = r"[^\s\x85\uFEFF]"
    )]
    pub html: Option<String>,
    /// The display name it is sent under: 1..=200 characters, not blank, no control
    /// characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        required = false,
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x85\uFEFF\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub from_name: Option<String>,
}

/// An A/B test to create. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateAbTest {
    /// Required: a campaign of the project (404 otherwise) with at least one step that has not
    /// started sending (409 otherwise); one test per campaign (409 `AB_TEST_EXISTS`).
    pub campaign_id: Uuid,
    /// Required: 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Required: 2..=4 variants of the campaign's first step, numbered 0, 1, … in this order.
    #[schema(min_items = 2, max_items = 4)]
    pub variants: Vec<Variant>,
    /// The share of the audience that gets the test (split evenly among the variants):
    /// 0.05..=0.5, default 0.2. The rest waits for the winner.
    #[schema(minimum = 0.05, maximum = 0.5)]
    pub test_share: Option<f64>,
    /// What a success is; default `opens`.
    #[schema(inline)]
    pub metric: Option<Metric>,
    /// The decision rule: the fewest recipients every variant needs, 1..=1,000,000, default
    /// 100.
    #[schema(minimum = 1, maximum = 1000000)]
    pub min_recipients: Option<i32>,
    /// The decision rule: the confidence level, 0.8..=0.999 (default 0.95); the rule is met
    /// when the chi-squared test's p-value is below 1 − confidence, and the intervals are
    /// drawn at this level.
    #[schema(minimum = 0.8, maximum = 0.999)]
    pub confidence: Option<f64>,
    /// The decision rule: promote the leader to the rest by itself once the rule is met;
    /// default false.
    pub auto_promote: Option<bool>,
}

impl Validate for CreateAbTest {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        if self.name.is_empty() {
            return Err(ApiError::invalid_field("name", "must not be blank"));
        }
        if !(2..=4).contains(&self.variants.len()) {
            return Err(ApiError::invalid_field(
                "variants",
                "must hold 2 to 4 variants",
            ));
        }
        if let Some(share) = self.test_share
            && !(0.05..=0.5).contains(&share)
        {
            return Err(ApiError::invalid_field("test_share", "must be 0.05..=0.5"));
        }
        if let Some(min) = self.min_recipients
            && !(1..=1_000_000).contains(&min)
        {
            return Err(ApiError::invalid_field(
                "min_recipients",
                "must be 1..=1000000",
            ));
        }
        if let Some(confidence) = self.confidence
            && stats::z_of(confidence).is_none()
        {
            return Err(ApiError::invalid_field("confidence", "must be 0.8..=0.999"));
        }
        for variant in &mut self.variants {
            if let Some(from_name) = &mut variant.from_name {
                http_kit::request::trim(from_name);
                if from_name.is_empty() || from_name.chars().any(char::is_control) {
                    return Err(ApiError::invalid_field(
                        "from_name",
                        "must be one line without control characters, not blank",
                    ));
                }
            }
        }
        for variant in &self.variants {
            check_template_syntax(&[
                ("subject", variant.subject.as_deref()),
                ("html", variant.html.as_deref()),
            ])?;
        }
        Ok(())
    }
}

/// The decision rule of a test.
#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionRule {
    /// The fewest recipients every variant needs before the rule can be met.
    pub min_recipients: i32,
    /// The rule is met when the p-value is below 1 − confidence.
    pub confidence: f64,
    /// The scheduler promotes the leader once the rule is met.
    pub auto_promote: bool,
}

/// An A/B test.
#[derive(Debug, Serialize, ToSchema)]
pub struct AbTestRecord {
    pub id: Uuid,
    pub campaign_id: Uuid,
    /// The step whose content the variants replace (the campaign's first at creation).
    pub step_id: Uuid,
    pub name: String,
    /// The variants, numbered by their place (0, 1, …).
    pub variants: Vec<Variant>,
    /// The share of the audience in the test group.
    pub test_share: f64,
    #[schema(inline)]
    pub metric: Metric,
    pub rule: DecisionRule,
    #[schema(inline)]
    pub status: AbTestStatus,
    /// The promoted variant's number; null while running.
    pub winner: Option<i16>,
    /// `hand` (promote_ab_winner) or `rule` (auto_promote); null while running.
    pub promoted_by: Option<String>,
    pub promoted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl TryFrom<AbTest> for AbTestRecord {
    type Error = ApiError;

    fn try_from(t: AbTest) -> Result<Self, ApiError> {
        Ok(Self {
            variants: serde_json::from_value(t.variants)?,
            metric: crate::ops::campaigns::parse_name(&t.metric)?,
            status: crate::ops::campaigns::parse_name(&t.status)?,
            rule: DecisionRule {
                min_recipients: t.min_recipients,
                confidence: t.confidence,
                auto_promote: t.auto_promote,
            },
            id: t.id,
            campaign_id: t.campaign_id,
            step_id: t.step_id,
            name: t.name,
            test_share: t.test_share,
            winner: t.winner,
            promoted_by: t.promoted_by,
            promoted_at: t.promoted_at,
            created_at: t.created_at,
        })
    }
}

pub fn ab_test_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("A/B test {id} not found")).with_code(MailErrorCode::AbTestNotFound)
}

/// Creates a test on a campaign that has not started sending, once per idempotency key
/// (`POST /ab-tests`, `create_ab_test`).
pub async fn create_ab_test(
    state: &AppState,
    project_id: Uuid,
    key: &IdempotencyKey,
    req: &CreateAbTest,
) -> Result<Answer, ApiError> {
    Idempotent::new(project_id, ROUTE, key, req)?
        .create(&state.pool, async |conn| {
            let campaign = crate::db::campaigns::lock(conn, project_id, req.campaign_id)
                .await?
                .ok_or_else(|| flows::campaign_not_found(req.campaign_id))?;
            if campaign.status == "completed" || campaign.status == "archived" {
                return Err(conflict("the campaign is over"));
            }
            if db::campaign_has_emails(conn, project_id, campaign.id).await? {
                return Err(conflict(
                    "the campaign has started sending: a test must come before its first email",
                ));
            }
            if db::exists_for(conn, campaign.id).await? {
                return Err(ApiError::conflict("the campaign has an A/B test already")
                    .with_code(MailErrorCode::AbTestExists));
            }
            let step = campaign_steps::list(conn, project_id, campaign.id)
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| {
                    ApiError::conflict("the campaign has no step to test")
                        .with_code(MailErrorCode::CampaignNotReady)
                })?;
            let row = db::insert(
                conn,
                NewAbTest {
                    id: Uuid::now_v7(),
                    project_id,
                    campaign_id: campaign.id,
                    step_id: step.id,
                    name: &req.name,
                    variants: serde_json::to_value(&req.variants)?,
                    test_share: req.test_share.unwrap_or(0.2),
                    metric: req.metric.unwrap_or_default().as_str(),
                    min_recipients: req.min_recipients.unwrap_or(100),
                    confidence: req.confidence.unwrap_or(0.95),
                    auto_promote: req.auto_promote.unwrap_or(false),
                },
            )
            .await?;
            AbTestRecord::try_from(row)
        })
        .await
}

fn conflict(message: &'static str) -> ApiError {
    ApiError::conflict(message).with_code(MailErrorCode::Conflict)
}

/// The project's test `id` (`GET /ab-tests/{id}`).
pub async fn get_ab_test(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<AbTestRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    db::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| ab_test_not_found(id))
        .and_then(AbTestRecord::try_from)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AbTestFilter {
    /// Only this campaign's tests (404 when it is not a campaign of the project).
    pub campaign_id: Option<Uuid>,
}

impl Validate for AbTestFilter {}

/// A page of the project's tests, oldest first (`GET /ab-tests`, `list_ab_tests`).
pub async fn list_ab_tests(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &AbTestFilter,
) -> Result<Page<AbTestRecord>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(campaign_id) = filter.campaign_id {
        flows::require_campaign(&mut conn, project_id, campaign_id).await?;
    }
    let rows = db::list(
        &mut conn,
        project_id,
        filter.campaign_id,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(AbTestRecord::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |t| t.id))
}

/// A confidence interval.
#[derive(Debug, Serialize, ToSchema)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
}

/// One variant's result.
#[derive(Debug, Serialize, ToSchema)]
pub struct VariantResult {
    /// Its number (its place in `variants`).
    pub variant: i16,
    /// Emails of the test group sent with it.
    pub recipients: i64,
    /// Those that met the metric.
    pub successes: i64,
    /// successes / recipients (0 without recipients).
    pub rate: f64,
    /// The Wilson score interval of the rate at the rule's confidence level.
    pub interval: Interval,
}

/// Pearson's chi-squared test of independence on the 2×k table (success or not × variant).
#[derive(Debug, Serialize, ToSchema)]
pub struct ChiSquaredTest {
    /// Always `pearson_chi_squared` (no continuity correction).
    pub name: String,
    pub statistic: f64,
    /// The variants with recipients, less one.
    pub degrees_of_freedom: u32,
    /// The probability of a statistic at least this large were the variants alike: the
    /// chi-squared distribution's survival function.
    pub p_value: f64,
}

/// Where a test stands (`check_ab_significance`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Significance {
    pub test_id: Uuid,
    #[schema(inline)]
    pub status: AbTestStatus,
    #[schema(inline)]
    pub metric: Metric,
    pub variants: Vec<VariantResult>,
    /// The variant with the highest rate (the first of equals); null before any recipient.
    pub leader: Option<i16>,
    /// Null while undefined: fewer than two variants with recipients, or no success or no
    /// failure at all.
    pub test: Option<ChiSquaredTest>,
    pub rule: DecisionRule,
    /// Every variant has `min_recipients` recipients and the p-value is below
    /// 1 − confidence.
    pub rule_met: bool,
    /// The promoted variant; null while running.
    pub winner: Option<i16>,
}

/// The test's results from `conn`.
async fn significance_of(
    conn: &mut AsyncPgConnection,
    test: &AbTest,
) -> Result<Significance, ApiError> {
    let variants: Vec<Variant> = serde_json::from_value(test.variants.clone())?;
    let counts = db::variant_counts(conn, test).await?;
    let table: Vec<(u64, u64)> = (0..variants.len())
        .map(|i| {
            counts
                .iter()
                .find(|c| usize::try_from(c.variant).ok() == Some(i))
                .map(|c| (c.successes.max(0) as u64, c.recipients.max(0) as u64))
                .unwrap_or((0, 0))
        })
        .collect();
    let z = stats::z_of(test.confidence).unwrap_or(1.959_963_984_540_054);
    let results = table
        .iter()
        .enumerate()
        .map(|(i, &(x, n))| {
            let (lower, upper) = stats::wilson(x, n, z);
            VariantResult {
                variant: i as i16,
                recipients: n as i64,
                successes: x as i64,
                rate: if n == 0 { 0.0 } else { x as f64 / n as f64 },
                interval: Interval { lower, upper },
            }
        })
        .collect();
    let chi = stats::chi_squared(&table);
    let enough = table
        .iter()
        .all(|&(_, n)| n >= u64::try_from(test.min_recipients).unwrap_or(u64::MAX));
    let rule_met = enough && chi.is_some_and(|c| c.p_value < 1.0 - test.confidence);
    Ok(Significance {
        test_id: test.id,
        status: crate::ops::campaigns::parse_name(&test.status)?,
        metric: crate::ops::campaigns::parse_name(&test.metric)?,
        variants: results,
        leader: stats::leader(&table).map(|i| i as i16),
        test: chi.map(|c| ChiSquaredTest {
            name: "pearson_chi_squared".to_owned(),
            statistic: c.statistic,
            degrees_of_freedom: c.degrees_of_freedom,
            p_value: c.p_value,
        }),
        rule: DecisionRule {
            min_recipients: test.min_recipients,
            confidence: test.confidence,
            auto_promote: test.auto_promote,
        },
        rule_met,
        winner: test.winner,
    })
}

/// The test's results (`GET /ab-tests/{id}/significance`, `check_ab_significance`).
pub async fn check_ab_significance(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Significance, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let test = db::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| ab_test_not_found(id))?;
    significance_of(&mut conn, &test).await
}

/// Which variant to promote. Unknown fields are refused.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct PromoteAbWinner {
    /// The variant's number, 0..=3 (400 past the test's last); default the leader.
    #[schema(minimum = 0, maximum = 3)]
    pub variant: Option<i16>,
}

impl Validate for PromoteAbWinner {
    fn validate(&mut self) -> Result<(), ApiError> {
        if self.variant.is_some_and(|v| !(0..=3).contains(&v)) {
            return Err(ApiError::invalid_field("variant", "must be 0..=3"));
        }
        Ok(())
    }
}

/// What a promotion did.
#[derive(Debug, Serialize, ToSchema)]
pub struct AbTestPromotion {
    pub test: AbTestRecord,
    /// The held-back contacts the winner now goes to (once each; the scheduler sends them).
    pub released: i64,
}

/// Promotes `variant` (the leader when `None`) of the project's test `id` in the caller's
/// transaction: the test's row is locked, so a promotion happens once (a second answers 409
/// `AB_TEST_PROMOTED`).
pub async fn promote(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    variant: Option<i16>,
    by: &str,
) -> Result<AbTestPromotion, ApiError> {
    let test = db::lock(conn, project_id, id)
        .await?
        .ok_or_else(|| ab_test_not_found(id))?;
    if test.status != "running" {
        return Err(ApiError::conflict(format!(
            "the test was promoted already (variant {})",
            test.winner.unwrap_or_default()
        ))
        .with_code(MailErrorCode::AbTestPromoted));
    }
    let count = test.variants.as_array().map_or(0, Vec::len);
    let winner = match variant {
        Some(v) if usize::try_from(v).is_ok_and(|v| v < count) => v,
        Some(_) => {
            return Err(ApiError::invalid_field(
                "variant",
                "is not a variant of this test",
            ));
        }
        None => significance_of(conn, &test).await?.leader.ok_or_else(|| {
            ApiError::conflict("no variant has recipients yet: name the variant to promote")
                .with_code(MailErrorCode::Conflict)
        })?,
    };
    let released = db::promote(conn, &test, winner, by).await?;
    let row = db::get(conn, project_id, id)
        .await?
        .ok_or_else(|| ab_test_not_found(id))?;
    Ok(AbTestPromotion {
        test: AbTestRecord::try_from(row)?,
        released: released as i64,
    })
}

/// The summary and audience of an approval to promote test `id`: the number held back.
pub async fn promotion_summary(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    variant: Option<i16>,
) -> Result<(String, i64), ApiError> {
    let test = db::lock(conn, project_id, id)
        .await?
        .ok_or_else(|| ab_test_not_found(id))?;
    let held = db::held_back(conn, project_id, id).await?;
    let which = match variant {
        Some(v) => format!("variant {v}"),
        None => "the leading variant".to_owned(),
    };
    Ok((
        format!(
            "send {which} of the A/B test \"{}\" to the {held} contacts held back",
            test.name
        ),
        held,
    ))
}

/// The arguments an approval of a promotion records.
pub fn promotion_arguments(id: Uuid, req: &PromoteAbWinner) -> Value {
    json!({"test_id": id, "variant": req.variant})
}

/// Runs one pass of the tests' own work for the campaign scheduler: places new enrollments of
/// running tests, and promotes the leaders of tests whose rule is met (`auto_promote`), each
/// under its row's lock (so any number of replicas do each once). Answers how many
/// enrollments were placed and tests promoted.
pub async fn scheduler_pass(pool: &store::Pool, batch: i64) -> anyhow::Result<(usize, usize)> {
    let mut conn = store::conn(pool).await?;
    let placed = conn
        .transaction::<_, anyhow::Error, _>(async |conn| {
            let mut placed = 0;
            for t in db::to_assign(conn, 10).await? {
                let Some(test) = db::lock(conn, t.project_id, t.id).await? else {
                    continue;
                };
                placed += assign(conn, &test, batch).await?;
            }
            Ok(placed)
        })
        .await?;
    let promoted = conn
        .transaction::<_, anyhow::Error, _>(async |conn| {
            let mut promoted = 0;
            for t in db::due_for_rule(conn, 10, RULE_CHECK_SECS).await? {
                let Some(test) = db::lock(conn, t.project_id, t.id).await? else {
                    continue;
                };
                let result = significance_of(conn, &test).await.map_err(anyhow_of)?;
                if let (true, Some(leader)) = (result.rule_met, result.leader) {
                    promote(conn, t.project_id, t.id, Some(leader), "rule")
                        .await
                        .map_err(anyhow_of)?;
                    promoted += 1;
                }
            }
            Ok(promoted)
        })
        .await?;
    Ok((placed, promoted))
}

/// How often (seconds) the scheduler looks at an `auto_promote` test's rule.
const RULE_CHECK_SECS: i32 = 5;

fn anyhow_of(err: ApiError) -> anyhow::Error {
    anyhow::anyhow!("{err}")
}

/// Places up to `batch` unplaced enrollments of the locked `test`.
async fn assign(conn: &mut AsyncPgConnection, test: &AbTest, batch: i64) -> anyhow::Result<usize> {
    let new = db::unassigned(conn, test, batch).await?;
    if new.is_empty() {
        return Ok(0);
    }
    let (assigned, in_test) = db::assigned(conn, test).await?;
    let keys: Vec<u64> = new
        .iter()
        .map(|u| stats::split_key(test.id, u.contact_id))
        .collect();
    let count = test.variants.as_array().map_or(2, Vec::len);
    let variants = stats::assign(
        &keys,
        assigned.max(0) as u64,
        in_test.max(0) as u64,
        test.test_share,
        u8::try_from(count).unwrap_or(2),
    );
    let rows: Vec<(Uuid, Option<i16>)> = new
        .iter()
        .zip(variants)
        .map(|(u, v)| (u.enrollment_id, v.map(i16::from)))
        .collect();
    Ok(db::insert_assignments(conn, test, &rows).await?)
}
