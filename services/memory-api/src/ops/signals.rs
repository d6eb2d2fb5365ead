//! Signals: a project signal of a product (with a credential, or signed with the product's
//! signing secret and verified here), and batches of producer signals, each read and written
//! on its own.

use std::collections::HashMap;

use auth::Caller;
use chrono::{DateTime, Duration, Utc};
use http_kit::{ApiError, Validate};
use secrets::Kek;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::db::products;
use crate::db::signals::{self, NewProducerSignal, NewProjectSignal, SignalWorkspace, Signature};
use crate::domain::signing;

/// Severity of a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignalSeverity {
    Info,
    Warning,
    Error,
    Critical,
}

impl SignalSeverity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
        }
    }

    /// `error` and `critical` project signals are anomalies in the intelligence feed.
    pub fn is_anomaly(self) -> bool {
        matches!(self, Self::Error | Self::Critical)
    }
}

/// The body of `POST /ingest/{project_id}`. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProjectSignal {
    /// What happened, 1..=200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub event_type: String,
    /// 1..=200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub title: String,
    /// `info` (default), `warning`, `error` or `critical`; `error` and `critical` add an
    /// `anomaly` item to the intelligence feed.
    pub severity: Option<SignalSeverity>,
    /// Free-form object.
    #[schema(value_type = Option<Object>)]
    pub body: Option<Map<String, Value>>,
    /// The source system's idempotency key, 1..=255 characters: a repeat (for the same
    /// product) records nothing and answers `duplicate: true` with the first signal's id.
    #[schema(min_length = 1, max_length = 255)]
    pub external_id: Option<String>,
}

impl Validate for ProjectSignal {}

/// The answer of `POST /ingest/{project_id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProjectSignalAccepted {
    /// Always true (a refused signal is an error answer).
    pub accepted: bool,
    /// Whether this repeats an `external_id` already received for the product, or a signed
    /// request already accepted (the same signature).
    pub duplicate: bool,
    /// The signal's id (the first signal's, for a duplicate).
    pub signal_id: Option<Uuid>,
}

/// Whether the signature was made with the product's secret, or with the secret it replaced
/// when that rotation is less than 24 hours old.
fn verifies(
    kek: &Kek,
    keys: &products::SigningKeys,
    timestamp: &str,
    body: &[u8],
    tag: &[u8; 32],
) -> bool {
    let open = |sealed: &Option<Vec<u8>>| {
        sealed
            .as_deref()
            .and_then(|s| signing::open(kek, keys.id, s).ok())
    };
    let grace = Duration::hours(signing::PREVIOUS_SECRET_GRACE_HOURS);
    let previous_valid = keys
        .signing_secret_rotated_at
        .is_some_and(|at| Utc::now() - at < grace);
    let mut secrets = Vec::with_capacity(2);
    secrets.extend(open(&keys.signing_secret));
    if previous_valid {
        secrets.extend(open(&keys.previous_signing_secret));
    }
    signing::verify_any(secrets.iter().map(String::as_str), timestamp, body, tag)
}

/// Records the signal of the product `(id, name)`; a signed one (its signature given) at most
/// once per signature.
pub async fn record(
    conn: &mut diesel_async::AsyncPgConnection,
    owner: Owner<'_>,
    (product_id, product_name): (Uuid, &str),
    signal: &ProjectSignal,
    signature: Option<Signature<'_>>,
) -> Result<ProjectSignalAccepted, ApiError> {
    let severity = signal.severity.unwrap_or(SignalSeverity::Info);
    let body = signal.body.clone().map(Value::Object);
    let new = NewProjectSignal {
        product_id,
        product_name,
        event_type: signal.event_type.trim(),
        title: signal.title.trim(),
        severity: severity.as_str(),
        body: body.as_ref(),
        external_id: signal.external_id.as_deref(),
        received_via: if signature.is_some() {
            "signature"
        } else {
            "bearer"
        },
        anomaly: severity.is_anomaly(),
    };
    let (id, duplicate) = match signature {
        Some(signature) => {
            signals::record_signed_project_signal(conn, owner, &new, signature).await?
        }
        None => signals::record_project_signal(conn, owner, &new).await?,
    };
    Ok(ProjectSignalAccepted {
        accepted: true,
        duplicate,
        signal_id: Some(id),
    })
}

// ------------------------------------------------------------------ producer signals
/// Where a producer signal comes from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignalSource {
    #[serde(rename = "analytics_tool_1")]
    #[schema(rename = "analytics_tool_1")]
    AnalyticsTool1,
    #[serde(rename = "logging_tool_1")]
    #[schema(rename = "logging_tool_1")]
    LoggingTool1,
    #[serde(rename = "mail_tool_1")]
    #[schema(rename = "mail_tool_1")]
    MailTool1,
    DecisionIndex,
    Mcp,
    Api,
    Manual,
}

impl SignalSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AnalyticsTool1 => "analytics_tool_1",
            Self::LoggingTool1 => "logging_tool_1",
            Self::MailTool1 => "mail_tool_1",
            Self::DecisionIndex => "decision_index",
            Self::Mcp => "mcp",
            Self::Api => "api",
            Self::Manual => "manual",
        }
    }
}

/// What a producer signal is about.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntityScope {
    User,
    Workspace,
    Brand,
    Product,
}

impl EntityScope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Workspace => "workspace",
            Self::Brand => "brand",
            Self::Product => "product",
        }
    }
}

/// The measurement behind a producer signal. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SignalPayload {
    /// When the source saw it.
    pub triggered_at: DateTime<Utc>,
    #[schema(schema_with = source_url_schema)]
    pub source_url: Option<String>,
    /// 1..=200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub metric_key: Option<String>,
    pub baseline_value: Option<f64>,
    pub current_value: Option<f64>,
    pub delta_percent: Option<f64>,
    /// Free-form object (default empty).
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// `null`, or an absolute URI of at most 2048 characters.
fn source_url_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type};
    Schema::OneOf(
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(SchemaFormat::Custom("uri".to_owned())))
                    .max_length(Some(2048)),
            )
            .description(Some("An absolute URI, at most 2048 characters"))
            .build(),
    )
}

fn workspace_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::schema::KnownFormat::Uuid,
        "A workspace of the caller (404 otherwise), stored with the signals; absent or null: \
         the credential's active workspace, if any",
    )
}

/// One producer signal. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProducerSignal {
    pub source: SignalSource,
    /// Default `user`.
    pub entity_scope: Option<EntityScope>,
    /// 1..=500 characters.
    #[schema(min_length = 1, max_length = 500)]
    pub entity_id: Option<String>,
    /// 1..=200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub signal_type: String,
    /// 1..=500 characters: signals of one key collapse within `collapse_window_minutes`.
    #[schema(min_length = 1, max_length = 500)]
    pub dedup_key: String,
    pub severity: SignalSeverity,
    /// 1..=500 characters.
    #[schema(min_length = 1, max_length = 500)]
    pub title: String,
    /// At most 4000 characters.
    #[schema(max_length = 4000)]
    pub description: Option<String>,
    // Checked by the rules of `SignalPayload`, then kept as sent (see `read_signal`).
    #[schema(value_type = SignalPayload)]
    pub payload: Value,
    /// Free-form objects (default empty), at most 50.
    #[schema(value_type = Option<Vec<Object>>, max_items = 50)]
    pub evidence: Option<Value>,
    /// Ids of decisions of the caller (default empty), at most 50: another owner's or an
    /// unknown id is this signal's error.
    #[schema(max_items = 50)]
    pub related_decisions: Option<Vec<Uuid>>,
    /// 0..=1.
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub confidence_score: Option<f64>,
    /// Minutes, 1..=525600 (default 60): a signal whose `dedup_key` was last seen within
    /// this many minutes collapses into that signal (its `count` and last-seen time grow)
    /// and answers its id.
    #[schema(minimum = 1, maximum = 525600, default = 60)]
    pub collapse_window_minutes: Option<i32>,
}

impl Validate for ProducerSignal {}

impl Validate for BatchEnvelope {
    const VERBATIM: &'static [&'static str] = &["signals"];

    fn restore(&mut self, name: &str, value: Value) {
        if let ("signals", Value::Array(items)) = (name, value) {
            self.signals = items;
        }
    }
}

/// The body of `POST /signals/ingest` as documented. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProducerSignalBatch {
    #[serde(rename = "workspaceId")]
    #[schema(rename = "workspaceId", schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
    /// 1..=50 signals, each validated and written on its own.
    #[schema(min_items = 1, max_items = 50)]
    pub signals: Vec<ProducerSignal>,
}

/// The envelope as read (its faults are a 400); its items are moved out as they are (no copy
/// of a 1 MiB body) and read one by one.
#[derive(Debug, Deserialize, ToSchema)]
pub struct BatchEnvelope {
    #[serde(rename = "workspaceId")]
    #[schema(rename = "workspaceId", schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
    #[schema(min_items = 1, max_items = 50)]
    pub signals: Vec<Value>,
}

/// The answer of `POST /signals/ingest` (201 and 207).
#[derive(Debug, Serialize, ToSchema)]
pub struct ProducerSignalsIngested {
    /// The ids of the accepted signals, in request order (a collapsed signal answers the id
    /// of the signal it collapsed into).
    pub ids: Vec<Uuid>,
    /// One line per refused signal, `signals[<index>].<field>: <problem>`, by index.
    pub errors: Vec<String>,
}

/// One item, against the rules of [`ProducerSignal`] (the body's NUL check covered it): a 400
/// naming the field, turned into the item's error by [`item_error`]. The payload and the
/// evidence, which the rules have checked, are moved out before the rest is deserialized and
/// kept as they are (deserializing them would rebuild every nested object).
fn read_signal(mut item: Value) -> Result<ProducerSignal, ApiError> {
    http_kit::request::rules::of_body::<ProducerSignal>().check(&mut item)?;
    let mut take = |name: &str| item.get_mut(name).map(Value::take);
    let (payload, evidence) = (take("payload"), take("evidence"));
    let mut signal: ProducerSignal = serde_path_to_error::deserialize(item).map_err(|err| {
        let path = err.path().to_string();
        let field = if path == "." { "body" } else { path.as_str() };
        ApiError::invalid_field(field, &err.into_inner().to_string())
    })?;
    signal.payload = payload.unwrap_or_default();
    signal.evidence = evidence;
    Ok(signal)
}

/// `signals[<index>].<field>: <problem>` from the 400 the item's reading gave.
fn item_error(index: usize, err: &ApiError) -> String {
    let field = err
        .details()
        .and_then(|d| d["field"].as_str())
        .unwrap_or("body");
    let problem = err
        .message
        .strip_prefix(field)
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(&err.message);
    if field == "body" {
        format!("signals[{index}]: {problem}")
    } else {
        format!("signals[{index}].{field}: {problem}")
    }
}

fn new_row(signal: ProducerSignal) -> NewProducerSignal {
    let mut payload = signal.payload;
    if let Some(members) = payload.as_object_mut() {
        members
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    NewProducerSignal {
        id: Uuid::now_v7(),
        source: signal.source.as_str().to_owned(),
        entity_scope: signal
            .entity_scope
            .unwrap_or(EntityScope::User)
            .as_str()
            .to_owned(),
        entity_id: signal.entity_id,
        signal_type: signal.signal_type,
        dedup_key: signal.dedup_key,
        severity: signal.severity.as_str().to_owned(),
        title: signal.title,
        description: signal.description,
        payload: payload.to_string(),
        evidence: signal
            .evidence
            .map_or_else(|| "[]".to_owned(), |evidence| evidence.to_string()),
        related_decisions: signal.related_decisions.unwrap_or_default(),
        confidence_score: signal.confidence_score,
        collapse_window_minutes: signal.collapse_window_minutes.unwrap_or(60),
        count: 1,
    }
}

/// Records a project signal of the caller's product `project_id` (404 if none).
pub async fn ingest_project_signal(
    pool: &Pool,
    caller: &Caller,
    project_id: Uuid,
    body: &ProjectSignal,
) -> Result<ProjectSignalAccepted, ApiError> {
    let owner = Owner::of(caller);
    let mut conn = store::conn(pool).await?;
    let product = products::find_by_id(&mut conn, owner, project_id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such product"))?;
    record(&mut conn, owner, (product.id, &product.name), body, None).await
}

/// The signing keys of the product `project_id` when the signature `tag` over `timestamp` and
/// `body` was made with its secret (or the one it replaced, within the grace period); `None`
/// for an unknown product or a wrong signature alike.
pub async fn signed_by(
    pool: &Pool,
    kek: &Kek,
    project_id: Uuid,
    timestamp: &str,
    body: &[u8],
    tag: &[u8; 32],
) -> Result<Option<products::SigningKeys>, ApiError> {
    let mut conn = store::conn(pool).await?;
    let keys = products::signing_keys(&mut conn, project_id).await?;
    Ok(keys.filter(|k| verifies(kek, k, timestamp, body, tag)))
}

/// Records a signed project signal of the product whose `keys` verified it, at most once per
/// signature.
pub async fn record_signed(
    pool: &Pool,
    keys: &products::SigningKeys,
    signal: &ProjectSignal,
    tag: &[u8; 32],
    signed_at: i64,
) -> Result<ProjectSignalAccepted, ApiError> {
    let owner = Owner {
        user_id: keys.user_id,
        environment: &keys.environment,
    };
    let replay = Signature {
        tag,
        expires_at: signing::replayable_until(signed_at),
    };
    let mut conn = store::conn(pool).await?;
    record(
        &mut conn,
        owner,
        (keys.id, &keys.name),
        signal,
        Some(replay),
    )
    .await
}

/// Reads and writes each producer signal of a batch on its own: the ids of those accepted and
/// the errors of the others (422 when none is accepted).
pub async fn ingest_producer_signals(
    pool: &Pool,
    caller: &Caller,
    workspace_id: Option<Uuid>,
    items: Vec<Value>,
) -> Result<ProducerSignalsIngested, ApiError> {
    let owner = Owner::of(caller);
    // The signals are read before a pooled connection is taken, so that it is held only for
    // the queries.
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut valid: Vec<(usize, ProducerSignal)> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        match read_signal(item) {
            Ok(signal) => valid.push((index, signal)),
            Err(err) => errors.push((index, item_error(index, &err))),
        }
    }
    let mut conn = store::conn(pool).await?;
    // An explicit `workspaceId` must be one of the caller's (404); absent, the credential's
    // active workspace (if any) is recorded, as the other writes of workspace-divided memory
    // do: the write reads it itself.
    let workspace = match workspace_id {
        Some(id) => {
            crate::ops::scope::view(&mut conn, caller, Some(id)).await?;
            SignalWorkspace::Given(id)
        }
        None => SignalWorkspace::ActiveOf(caller.key_id),
    };

    let wanted: Vec<Uuid> = valid
        .iter()
        .flat_map(|(_, s)| s.related_decisions.iter().flatten().copied())
        .collect();
    if !wanted.is_empty() {
        let owned = signals::owned_decisions(&mut conn, owner, &wanted).await?;
        valid.retain(|(index, signal)| {
            let foreign = signal
                .related_decisions
                .iter()
                .flatten()
                .enumerate()
                .find(|(_, id)| !owned.contains(id));
            if let Some((j, _)) = foreign {
                errors.push((
                    *index,
                    format!(
                        "signals[{index}].related_decisions[{j}]: not found: no such decision \
                         of the caller"
                    ),
                ));
            }
            foreign.is_none()
        });
    }
    errors.sort_by_key(|(index, _)| *index);
    let errors: Vec<String> = errors.into_iter().map(|(_, e)| e).collect();
    if valid.is_empty() {
        return Err(ApiError::unprocessable(format!(
            "no signal was accepted: {}",
            errors.join("; ")
        )));
    }

    // One row per key: later signals of a key in this request collapse into its first.
    let mut rows: Vec<NewProducerSignal> = Vec::with_capacity(valid.len());
    // `valid` is in request order, and so is `row_of_item`.
    let mut row_of_key: HashMap<String, usize> = HashMap::with_capacity(valid.len());
    let mut row_of_item: Vec<usize> = Vec::with_capacity(valid.len());
    for (_, signal) in valid {
        if let Some(&row) = row_of_key.get(&signal.dedup_key) {
            rows[row].count += 1;
            row_of_item.push(row);
            continue;
        }
        row_of_key.insert(signal.dedup_key.clone(), rows.len());
        row_of_item.push(rows.len());
        rows.push(new_row(signal));
    }
    let written = signals::record_producer_signals(&mut conn, owner, workspace, &rows).await?;
    let row_ids: Vec<Uuid> = rows
        .iter()
        .map(|row| {
            written.get(&row.dedup_key).copied().ok_or_else(|| {
                ApiError::internal(format!("no id written for the key {:?}", row.dedup_key))
            })
        })
        .collect::<Result<_, _>>()?;
    let ids: Vec<Uuid> = row_of_item.into_iter().map(|row| row_ids[row]).collect();
    Ok(ProducerSignalsIngested { ids, errors })
}
