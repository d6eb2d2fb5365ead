//! AI cost summaries: the caller's `ai_cost` events summed exactly over a window of days, by
//! model and by day.

use auth::Caller;
use chrono::{DateTime, Days, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::{IntoParams, ToSchema};

use crate::db::events::{self, CostLine};
use crate::db::owner::Owner;
use crate::domain::ai_cost::{Usd, to_exact_json};

const DAYS_DEFAULT: u32 = 30;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CostParams {
    /// The window: this many UTC calendar days ending today (today included), 1..=365,
    /// default 30. An event counts when its `occurred_at` is in
    /// [`period_start`, `period_end`).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for CostParams {}

/// Input and output tokens.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenTotals {
    #[schema(minimum = 0)]
    pub input: i64,
    #[schema(minimum = 0)]
    pub output: i64,
}

/// The costs of one model in the window.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelCost {
    pub model: String,
    #[schema(schema_with = part_usd_schema)]
    pub cost_usd: Usd,
    #[schema(minimum = 0)]
    pub input_tokens: i64,
    #[schema(minimum = 0)]
    pub output_tokens: i64,
    #[schema(minimum = 0)]
    pub event_count: i64,
}

/// The costs of one UTC day in the window.
#[derive(Debug, Serialize, ToSchema)]
pub struct DayCost {
    /// The UTC day, `YYYY-MM-DD`.
    #[schema(format = Date)]
    pub date: String,
    #[schema(schema_with = part_usd_schema)]
    pub cost_usd: Usd,
    #[schema(minimum = 0)]
    pub input_tokens: i64,
    #[schema(minimum = 0)]
    pub output_tokens: i64,
    #[schema(minimum = 0)]
    pub event_count: i64,
}

/// An exact decimal amount: a JSON number (no `format`: it is not a double).
fn usd_schema(description: &str) -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Number)
        .minimum(Some(0))
        .description(Some(description))
        .build()
}

fn total_usd_schema() -> utoipa::openapi::schema::Object {
    usd_schema(
        "The exact decimal sum of the events' `cost_usd` (summed as PostgreSQL `numeric`, never \
         as floats), written as a JSON number with exactly its digits and no trailing zeros \
         (`0.3`, not `0.30000000000000004`); at most 10 decimal places. `0` without events.",
    )
}

fn part_usd_schema() -> utoipa::openapi::schema::Object {
    usd_schema("The exact decimal sum of these events' `cost_usd` (as `total_cost_usd`).")
}

/// The AI cost summary of the caller's `ai_cost` events in the window.
#[derive(Debug, Serialize, ToSchema)]
pub struct CostSummary {
    /// The product of `GET /ai/costs/{product}`; null for all products.
    pub product: Option<String>,
    #[schema(schema_with = total_usd_schema)]
    pub total_cost_usd: Usd,
    pub total_tokens: TokenTotals,
    /// One entry per model with events in the window, costliest first (then by name).
    pub by_model: Vec<ModelCost>,
    /// One entry per UTC day with events in the window (days without events are left out),
    /// oldest first.
    pub by_day: Vec<DayCost>,
    /// The window's length in days (`days`).
    pub period_days: u32,
    /// Midnight UTC starting the window's first day (included).
    pub period_start: DateTime<Utc>,
    /// Midnight UTC after today (excluded).
    pub period_end: DateTime<Utc>,
    /// How many events the sums cover.
    #[schema(minimum = 0)]
    pub event_count: i64,
}

/// The caller's AI costs over the last `days` (all products, or one), as exact JSON.
pub async fn summary(
    pool: &Pool,
    caller: &Caller,
    product: Option<String>,
    days: Option<u32>,
) -> Result<Vec<u8>, ApiError> {
    let owner = Owner::of(caller);
    if let Some(product) = &product {
        let mut conn = store::conn(pool).await?;
        if !events::product_known(&mut conn, owner, product).await? {
            return Err(ApiError::not_found("no such product"));
        }
    }
    let period_days = days.unwrap_or(DAYS_DEFAULT);
    let (period_start, period_end) = window(Utc::now(), period_days);
    let mut conn = store::conn(pool).await?;
    let lines = events::summary(
        &mut conn,
        owner,
        product.as_deref(),
        period_start,
        period_end,
    )
    .await?;
    let summary = build(product, period_days, period_start, period_end, lines)?;
    Ok(to_exact_json(&summary)?)
}

/// `[midnight UTC of the window's first day, midnight UTC after today)`.
fn window(now: DateTime<Utc>, days: u32) -> (DateTime<Utc>, DateTime<Utc>) {
    let today = now.date_naive();
    let start = today
        .checked_sub_days(Days::new(u64::from(days.max(1) - 1)))
        .unwrap_or(today);
    let end = today.checked_add_days(Days::new(1)).unwrap_or(today);
    let midnight = |d: chrono::NaiveDate| d.and_time(chrono::NaiveTime::MIN).and_utc();
    (midnight(start), midnight(end))
}

fn usd(text: &str) -> Result<Usd, ApiError> {
    Usd::parse(text).ok_or_else(|| ApiError::internal(format!("not a decimal sum: {text:?}")))
}

fn build(
    product: Option<String>,
    period_days: u32,
    period_start: DateTime<Utc>,
    period_end: DateTime<Utc>,
    lines: Vec<CostLine>,
) -> Result<CostSummary, ApiError> {
    let mut summary = CostSummary {
        product,
        total_cost_usd: usd("0")?,
        total_tokens: TokenTotals {
            input: 0,
            output: 0,
        },
        by_model: Vec::new(),
        by_day: Vec::new(),
        period_days,
        period_start,
        period_end,
        event_count: 0,
    };
    for line in lines {
        match (line.kind.as_str(), line.key) {
            ("total", _) => {
                summary.total_cost_usd = usd(&line.cost_usd)?;
                summary.total_tokens = TokenTotals {
                    input: line.input_tokens,
                    output: line.output_tokens,
                };
                summary.event_count = line.event_count;
            }
            ("model", Some(model)) => summary.by_model.push(ModelCost {
                model,
                cost_usd: usd(&line.cost_usd)?,
                input_tokens: line.input_tokens,
                output_tokens: line.output_tokens,
                event_count: line.event_count,
            }),
            ("day", Some(date)) => summary.by_day.push(DayCost {
                date,
                cost_usd: usd(&line.cost_usd)?,
                input_tokens: line.input_tokens,
                output_tokens: line.output_tokens,
                event_count: line.event_count,
            }),
            (kind, key) => {
                return Err(ApiError::internal(format!(
                    "unexpected cost line {kind} {key:?}"
                )));
            }
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn the_window_is_whole_utc_days_ending_today() {
        let now = Utc.with_ymd_and_hms(2026, 3, 1, 23, 59, 59).unwrap();
        let (start, end) = window(now, 1);
        assert_eq!(start, Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap());
        assert_eq!(end, Utc.with_ymd_and_hms(2026, 3, 2, 0, 0, 0).unwrap());
        let (start, _) = window(now, 30);
        assert_eq!(start, Utc.with_ymd_and_hms(2026, 1, 31, 0, 0, 0).unwrap());
    }
}
