//! Datasets: rows written into a caller's named dataset (with its inferred schema), and the
//! datasets and rows read back.

use std::collections::HashMap;

use auth::Caller;
use chrono::{DateTime, Utc};
use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::datasets::{self as db, Written};
use crate::db::owner::Owner;
use crate::domain::datasets::{
    self as domain, COLUMN_NAME_MAX, COLUMNS_MAX, ColumnType, KEY_MAX, KeyedRow, NAME_MAX,
    ROWS_MAX, ROWS_MIN, Schema, WORKER_TYPE_MAX,
};

/// The JSON type of a column's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ColumnKind {
    String,
    Number,
    Boolean,
    Null,
    Object,
    Array,
}

/// Refines `number`: every value is an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NumberFormat {
    Integer,
}

/// A column's type. Widening (on write): `null` < every other type; `number` with
/// `format: integer` < `number`; any two other types join to `string`. Null values fit
/// every type.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ColumnSchema {
    #[serde(rename = "type")]
    pub kind: ColumnKind,
    /// `integer` on a `number` column whose values are all integers (absent otherwise). In a
    /// schema override with `type: number`: coerce to integers (a fractional value is a
    /// coercion error); ignored with other types.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<NumberFormat>,
}

impl ColumnSchema {
    /// The column type this names (`format` counts only with `number`).
    pub fn column_type(&self) -> ColumnType {
        match (self.kind, self.format) {
            (ColumnKind::Number, Some(NumberFormat::Integer)) => ColumnType::Integer,
            (ColumnKind::Number, None) => ColumnType::Number,
            (ColumnKind::String, _) => ColumnType::String,
            (ColumnKind::Boolean, _) => ColumnType::Boolean,
            (ColumnKind::Null, _) => ColumnType::Null,
            (ColumnKind::Object, _) => ColumnType::Object,
            (ColumnKind::Array, _) => ColumnType::Array,
        }
    }
}

/// A dataset of the caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct Dataset {
    pub id: Uuid,
    /// Unique per owner (and environment).
    pub name: String,
    /// Column name → type, in the order columns first appeared.
    #[schema(value_type = HashMap<String, ColumnSchema>)]
    pub schema: Value,
    pub row_count: i64,
    /// The last `owning_worker_type` a write named.
    pub owning_worker_type: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The last write.
    pub updated_at: DateTime<Utc>,
}

impl From<db::Dataset> for Dataset {
    fn from(d: db::Dataset) -> Self {
        Self {
            id: d.id,
            name: d.name,
            schema: Schema::from_stored(&d.column_types).to_json(),
            row_count: d.row_count,
            owning_worker_type: d.owning_worker_type,
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
}

/// The ingest response of dataset writes (`POST /ingest/datasets/{name}/rows`,
/// `POST /ingest/upload/confirm`).
#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetIngestResult {
    pub success: bool,
    /// Always null here (rows are not events).
    pub event_id: Option<Uuid>,
    pub dataset_id: Uuid,
    /// Rows added.
    #[schema(minimum = 0)]
    pub inserted: i32,
    /// Rows replaced (an upsert's, or an upload's, rows whose `id` the dataset held).
    #[schema(minimum = 0)]
    pub updated: i32,
    /// True when this answers a repeat (the same `idempotency_key` on the dataset, or a
    /// confirmed upload confirmed again): the first request's counts, nothing written again.
    pub deduplicated: bool,
}

impl DatasetIngestResult {
    pub fn new(dataset_id: Uuid, written: Written, deduplicated: bool) -> Self {
        Self {
            success: true,
            event_id: None,
            dataset_id,
            inserted: written.inserted,
            updated: written.updated,
            deduplicated,
        }
    }
}

/// How rows meet the dataset's rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum IngestMode {
    /// Rows are added. A row's `id` (optional) must be new to the dataset (409 otherwise).
    #[default]
    Append,
    /// Every row needs an `id`; a row replaces the dataset's row of that `id` (keeping its
    /// place), or is added.
    Upsert,
}

/// The members of `POST /ingest/datasets/{name}/rows`'s body ([`IngestRows`] adds the rule
/// across them). Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IngestFields {
    /// 1..=500 rows, each an object of at most 500 columns whose names are 1..=200
    /// characters. A row's `id`, when present and not null, is a string of 1..=255 characters
    /// or a number, and is the row's key (`"1"` and `1` are different keys). Within one
    /// request rows apply in order: in upsert mode a row repeating an earlier row's `id`
    /// replaces it; in append mode it conflicts with it (409).
    #[schema(schema_with = rows_schema)]
    pub rows: Vec<Map<String, Value>>,
    /// `append` (default) or `upsert`.
    pub mode: Option<IngestMode>,
    /// A retry with the same key on the same dataset writes nothing and answers the first
    /// request's result with `deduplicated: true`, whatever rows it carries. Keys are kept
    /// 7 days.
    #[schema(min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
    /// Recorded on the dataset (the last one given is shown).
    #[schema(max_length = 120)]
    pub owning_worker_type: Option<String>,
}

fn rows_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{
        AdditionalProperties, ArrayBuilder, ObjectBuilder, SchemaType, Type,
    };
    let name = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(COLUMN_NAME_MAX))
        .build();
    let id = ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([
            Type::String,
            Type::Number,
            Type::Null,
        ]))
        .min_length(Some(1))
        .max_length(Some(KEY_MAX))
        .description(Some(
            "The row's key: a string of 1..=255 characters or a number",
        ));
    let row = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("id", id)
        .additional_properties(Some(AdditionalProperties::FreeForm(true)))
        .max_properties(Some(COLUMNS_MAX))
        .property_names(Some(name));
    ArrayBuilder::new()
        .items(row)
        .min_items(Some(ROWS_MIN))
        .max_items(Some(ROWS_MAX))
        .build()
}

/// The body of `POST /ingest/datasets/{name}/rows`: its members, and in upsert mode an `id`
/// (not null) on every row, stated as `anyOf` so that the document says it and the request
/// extractor enforces it.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct IngestRows(pub IngestFields);

impl utoipa::PartialSchema for IngestRows {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{
            AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, SchemaType, Type,
        };
        let append = ObjectBuilder::new().property(
            "mode",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                .enum_values(Some([Value::from("append"), Value::Null])),
        );
        let keyed_row = ObjectBuilder::new().required("id").property(
            "id",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Number]))
                .min_length(Some(1))
                .max_length(Some(KEY_MAX)),
        );
        let upsert = ObjectBuilder::new()
            .required("mode")
            .required("rows")
            .property(
                "mode",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["upsert"])),
            )
            .property("rows", ArrayBuilder::new().items(keyed_row));
        AllOfBuilder::new()
            .item(IngestFields::schema())
            .item(AnyOfBuilder::new().item(append).item(upsert))
            .description(Some(
                "The body of `POST /ingest/datasets/{name}/rows`; in upsert mode every row \
                 needs an `id` (not null).",
            ))
            .into()
    }
}

impl ToSchema for IngestRows {
    fn name() -> std::borrow::Cow<'static, str> {
        "IngestRows".into()
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        IngestFields::schemas(schemas);
    }
}

/// The rows of a request, keyed, after the rules across rows: in upsert mode a row repeating
/// an earlier `id` replaces it (the count of such replacements comes back too).
fn keyed_rows(
    rows: Vec<Map<String, Value>>,
    mode: IngestMode,
) -> Result<(Vec<KeyedRow>, i32), ApiError> {
    let mut out: Vec<KeyedRow> = Vec::with_capacity(rows.len());
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(rows.len());
    let mut replaced = 0;
    for (i, row) in rows.into_iter().enumerate() {
        let key = domain::row_key(&row)
            .map_err(|problem| ApiError::invalid_field(&format!("rows[{i}].id"), problem))?;
        let Some(key) = key else {
            if mode == IngestMode::Upsert {
                return Err(ApiError::invalid_field(
                    &format!("rows[{i}].id"),
                    "is required in upsert mode",
                ));
            }
            out.push((None, row));
            continue;
        };
        match (seen.get(&key), mode) {
            (Some(&at), IngestMode::Upsert) => {
                out[at].1 = row;
                replaced += 1;
            }
            (Some(&at), IngestMode::Append) => {
                // In append mode every row is kept, so `at` is the request's index.
                return Err(ApiError::conflict(format!(
                    "rows[{i}].id: repeats the id of rows[{at}] (mode upsert replaces it)"
                )));
            }
            (None, _) => {
                seen.insert(key.clone(), out.len());
                out.push((Some(key), row));
            }
        }
    }
    Ok((out, replaced))
}

impl Validate for IngestRows {
    fn validate(&mut self) -> Result<(), ApiError> {
        for (i, row) in self.0.rows.iter().enumerate() {
            for name in row.keys() {
                if let Some(problem) = domain::column_name_problem(name) {
                    return Err(ApiError::invalid_field(&format!("rows[{i}]"), problem));
                }
            }
        }
        Ok(())
    }
}

/// A dataset name from a path: 1..=120 characters, not blank.
pub fn path_name(name: &str) -> Result<(), ApiError> {
    let len = name.chars().count();
    if len == 0 || len > NAME_MAX {
        return Err(ApiError::invalid_field(
            "name",
            "must be 1 to 120 characters",
        ));
    }
    if name.trim().is_empty() {
        return Err(ApiError::invalid_field("name", "must not be blank"));
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("rows[{0}].id exists")]
    Exists(usize),
    #[error("too many columns")]
    TooManyColumns,
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

fn too_many_columns() -> ApiError {
    ApiError::conflict(format!(
        "the dataset would have more than {COLUMNS_MAX} columns, the most a dataset may have"
    ))
}

/// A stored row.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetRow {
    /// The service's id of the row (the row's own `id` field, if any, is in `row`).
    pub row_id: Uuid,
    /// The row as written (an upsert replaces it whole).
    #[schema(value_type = Object)]
    pub row: Value,
    pub created_at: DateTime<Utc>,
    /// The last upsert of the row (its creation otherwise).
    pub updated_at: DateTime<Utc>,
}

/// A page of a dataset's rows.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetRows {
    pub dataset_id: Uuid,
    pub name: String,
    /// Rows in the order they were first written (an upsert keeps a row's place).
    pub data: Vec<DatasetRow>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// `KEY_MAX` and `WORKER_TYPE_MAX` are stated as literals in the schema attributes above.
const _: () = assert!(KEY_MAX == 255 && WORKER_TYPE_MAX == 120 && NAME_MAX == 120);

/// List the caller's datasets with their schemas.
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    page: &PageParams,
) -> Result<Page<Dataset>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(pool).await?;
    let found = db::list(&mut conn, Owner::of(caller), after, i64::from(limit) + 1).await?;
    let found: Vec<Dataset> = found.into_iter().map(Dataset::from).collect();
    Ok(Page::from_rows(found, limit, |d| d.id))
}

/// Writes rows into the caller's dataset `name` (created on first use), in one transaction:
/// a repeated idempotency key answers the first write's result.
pub async fn ingest_rows(
    pool: &Pool,
    caller: &Caller,
    name: &str,
    body: IngestFields,
) -> Result<DatasetIngestResult, ApiError> {
    let mode = body.mode.unwrap_or_default();
    let (rows, replaced) = keyed_rows(body.rows, mode)?;
    let owner = Owner::of(caller);
    let key = body.idempotency_key.as_deref();
    let worker = body.owning_worker_type.as_deref();
    let mut conn = store::conn(pool).await?;
    let result = conn
        .transaction(async |conn| {
            let dataset = db::lock_or_create(conn, owner, name).await?;
            if let Some(key) = key
                && let Some(first) = db::ingest_key(conn, dataset.id, key).await?
            {
                return Ok(DatasetIngestResult::new(dataset.id, first, true));
            }
            if mode == IngestMode::Append {
                let keys: Vec<&str> = rows.iter().filter_map(|(k, _)| k.as_deref()).collect();
                let existing = db::existing_keys(conn, dataset.id, &keys).await?;
                if let Some(i) = rows
                    .iter()
                    .position(|(k, _)| k.as_ref().is_some_and(|k| existing.contains(k)))
                {
                    return Err(WriteError::Exists(i));
                }
            }
            let mut schema = Schema::from_stored(&dataset.column_types);
            for (_, row) in &rows {
                schema
                    .widen_row(row)
                    .map_err(|_| WriteError::TooManyColumns)?;
            }
            let mut written = db::write_rows(conn, dataset.id, rows).await?;
            // Rows repeating an earlier row's id in this request replaced it.
            written.updated += replaced;
            db::update_after_write(
                conn,
                dataset.id,
                &schema.to_stored(),
                written.inserted,
                worker,
            )
            .await?;
            if let Some(key) = key {
                db::record_ingest_key(conn, dataset.id, key, written).await?;
            }
            Ok(DatasetIngestResult::new(dataset.id, written, false))
        })
        .await
        .map_err(|e| match e {
            WriteError::Exists(i) => ApiError::conflict(format!(
                "rows[{i}].id: the dataset already has a row with this id (mode upsert replaces it)"
            )),
            WriteError::TooManyColumns => too_many_columns(),
            WriteError::Database(e) => ApiError::internal_error(&e),
        })?;
    Ok(result)
}

/// The caller's dataset `name` (404 if none).
pub async fn get(pool: &Pool, caller: &Caller, name: &str) -> Result<Dataset, ApiError> {
    let mut conn = store::conn(pool).await?;
    db::find(&mut conn, Owner::of(caller), name)
        .await?
        .map(Dataset::from)
        .ok_or_else(|| ApiError::not_found("no such dataset"))
}

/// A page of the rows of the caller's dataset `name` (404 if none).
pub async fn rows(
    pool: &Pool,
    caller: &Caller,
    name: &str,
    page: &PageParams,
) -> Result<DatasetRows, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let owner = Owner::of(caller);
    let mut conn = store::conn(pool).await?;
    let dataset = db::find(&mut conn, owner, name)
        .await?
        .ok_or_else(|| ApiError::not_found("no such dataset"))?;
    let found = db::rows_page(&mut conn, owner, dataset.id, after, i64::from(limit) + 1).await?;
    let found: Vec<DatasetRow> = found
        .into_iter()
        .map(|r| DatasetRow {
            row_id: r.id,
            row: r.data,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
        .collect();
    let page = Page::from_rows(found, limit, |r| r.row_id);
    Ok(DatasetRows {
        dataset_id: dataset.id,
        name: dataset.name,
        data: page.data,
        next_cursor: page.next_cursor,
    })
}
