//! Business events (and AI cost telemetry as `ai_cost` events): recording one, at most once
//! per idempotency key or external id.

use auth::Caller;
use chrono::{DateTime, Duration, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::events::{self, Ingested, NewEvent};
use crate::db::owner::Owner;
use crate::domain::ai_cost::{self, AiCost};

/// The largest `payload`, in bytes of compact JSON.
pub const PAYLOAD_MAX_BYTES: usize = 64 * 1024;

/// How far in the future `occurred_at` may be (clocks differ).
const FUTURE_SLACK_HOURS: i64 = 24;

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventSeverity {
    #[default]
    Info,
    Warning,
    Error,
    Critical,
}

impl EventSeverity {
    fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
        }
    }
}

/// The body of `POST /ingest/events`. Unknown fields are refused.
///
/// A repeated `idempotency_key`, or a repeated `external_id`, of the same owner (user and
/// environment) records nothing and answers 200 `deduplicated: true` with the first event's id
/// (the rest of the body is not compared); keys are kept as long as the event, forever.
///
/// `event_type` `ai_cost` is AI cost telemetry, and its `payload` must then hold: `product`
/// (string, 1..=100 characters, not blank, trimmed; any name, a registered product or not),
/// `model` (string, 1..=200 characters, not blank, trimmed), `cost_usd` (required; a JSON
/// number or a decimal string of digits with an optional fraction, from 0 to 100000, at most
/// 10 decimal places; kept as an exact decimal, never as a float), `input_tokens` and
/// `output_tokens` (integers 0..=1000000000, default 0). Anything else in the payload is kept.
/// A payload that breaks these rules answers 400 naming the member (`payload.cost_usd`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct IngestEvent {
    /// 1..=120 characters, not blank (stored trimmed). `ai_cost`: AI cost telemetry.
    #[schema(min_length = 1, max_length = 120, pattern = r"[^\s\x85\uFEFF]")]
    pub event_type: String,
    /// Default `info`.
    pub severity: Option<EventSeverity>,
    /// The event's id in the producer's system, 1..=255 characters, not blank (compared
    /// exactly): a repeat answers the first event.
    #[schema(min_length = 1, max_length = 255, pattern = r"[^\s\x85\uFEFF]")]
    pub external_id: Option<String>,
    /// 1..=255 characters, not blank (compared exactly): a repeat answers the first event.
    #[schema(min_length = 1, max_length = 255, pattern = r"[^\s\x85\uFEFF]")]
    pub idempotency_key: Option<String>,
    #[schema(schema_with = occurred_at_schema)]
    pub occurred_at: Option<DateTime<Utc>>,
    /// The kind of worker that produced the event, 1..=120 characters, not blank (stored
    /// trimmed).
    #[schema(min_length = 1, max_length = 120, pattern = r"[^\s\x85\uFEFF]")]
    pub worker_type: Option<String>,
    /// Free-form object, at most 65536 bytes as compact JSON (default `{}`). For `ai_cost`,
    /// see the body's description.
    #[schema(value_type = Option<Object>)]
    pub payload: Option<Value>,
    /// The typed `ai_cost` payload, read by `validate`.
    #[serde(skip)]
    pub cost: Option<AiCost>,
}

fn occurred_at_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::DateTime,
        "When it happened (RFC 3339), from 1970-01-01T00:00:00Z to 24 hours after the \
         server's clock; default: when it is received. AI costs are summed by this time.",
    )
}

impl Validate for IngestEvent {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.event_type);
        if let Some(worker) = &mut self.worker_type {
            http_kit::request::trim(worker);
        }
        if let Some(at) = self.occurred_at {
            let latest = Utc::now() + Duration::hours(FUTURE_SLACK_HOURS);
            if at < DateTime::UNIX_EPOCH || at > latest {
                return Err(ApiError::invalid_field(
                    "occurred_at",
                    "must be from 1970-01-01T00:00:00Z to 24 hours from now",
                ));
            }
        }
        let payload = self
            .payload
            .get_or_insert_with(|| Value::Object(Map::new()));
        let size = serde_json::to_vec(payload).map_or(usize::MAX, |b| b.len());
        if size > PAYLOAD_MAX_BYTES {
            return Err(ApiError::invalid_field(
                "payload",
                &format!("must be at most {PAYLOAD_MAX_BYTES} bytes as JSON"),
            ));
        }
        if self.event_type == ai_cost::EVENT_TYPE {
            let members = payload.as_object().ok_or_else(|| {
                ApiError::invalid_field("payload", "must be an object for an ai_cost event")
            })?;
            let cost =
                ai_cost::read(members).map_err(|p| ApiError::invalid_field(&p.path, &p.problem))?;
            self.cost = Some(cost);
        }
        Ok(())
    }
}

/// The ingest response of an event.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventIngested {
    pub success: bool,
    /// The new event's id, or the first event's on a repeat.
    pub event_id: Uuid,
    /// 1 when recorded now, 0 on a repeat.
    #[schema(minimum = 0, maximum = 1)]
    pub inserted: u32,
    /// Whether the `idempotency_key` or `external_id` was seen before (nothing recorded).
    pub deduplicated: bool,
}

/// Records a business event of the caller (a repeated idempotency key or external id is a
/// duplicate: the first event's id, nothing inserted).
pub async fn ingest(
    pool: &Pool,
    caller: &Caller,
    body: IngestEvent,
) -> Result<EventIngested, ApiError> {
    let payload = body.payload.unwrap_or_else(|| Value::Object(Map::new()));
    let mut conn = store::conn(pool).await?;
    let ingested = events::ingest(
        &mut conn,
        Owner::of(caller),
        NewEvent {
            event_type: &body.event_type,
            severity: body.severity.unwrap_or_default().as_str(),
            external_id: body.external_id.as_deref(),
            idempotency_key: body.idempotency_key.as_deref(),
            occurred_at: body.occurred_at.unwrap_or_else(Utc::now),
            worker_type: body.worker_type.as_deref(),
            payload: &payload,
            cost: body.cost.as_ref(),
        },
    )
    .await?;
    Ok(match ingested {
        Ingested::Inserted(id) => EventIngested {
            success: true,
            event_id: id,
            inserted: 1,
            deduplicated: false,
        },
        Ingested::Duplicate(id) => EventIngested {
            success: true,
            event_id: id,
            inserted: 0,
            deduplicated: true,
        },
    })
}
