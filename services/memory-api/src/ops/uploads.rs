//! The two-step upload's use cases: a parsed file kept until its confirm (the preview), and
//! its rows coerced and written into a dataset at confirm.

use std::collections::BTreeMap;

use auth::Caller;
use chrono::{DateTime, Utc};
use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Pool;
use tokio::sync::mpsc;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::datasets::{self as db, NewUpload, Written};
use crate::db::owner::Owner;
use crate::domain::datasets::{
    COERCION_ERRORS_MAX, Coercion, CoercionError, FileError, Format, Halt, Inference, NAME_MAX,
    Schema, read_rows,
};
use crate::ops::datasets::{ColumnSchema, DatasetIngestResult};

/// Rows per insert statement at confirm.
const CONFIRM_BATCH: usize = 1000;

/// A preview of an upload.
#[derive(Debug, Serialize, ToSchema)]
pub struct UploadPreview {
    pub success: bool,
    /// Confirm it at `POST /ingest/upload/confirm` within 24 hours.
    pub upload_id: Uuid,
    pub dataset_name: String,
    #[schema(minimum = 0)]
    pub row_count: i32,
    /// Column name → type, in the order columns first appeared (see the module's lattice:
    /// each column holds the least type of its values).
    #[schema(value_type = BTreeMap<String, ColumnSchema>)]
    pub inferred_schema: Value,
    /// The first five rows, coerced to the inferred schema as confirming without overrides
    /// would store them.
    #[schema(value_type = Vec<Object>)]
    pub sample_rows: Vec<Value>,
    /// 24 hours after the preview; confirming later answers 404.
    pub expires_at: DateTime<Utc>,
    /// `csv`, `json` or `ndjson`: how the file was read.
    pub format: String,
}

/// A dataset name given in a request: 1..=120 characters, not blank, no NUL.
pub fn check_name(field: &str, name: &str) -> Result<(), ApiError> {
    let len = name.chars().count();
    if len == 0 || len > NAME_MAX {
        return Err(ApiError::invalid_field(
            field,
            "must be 1 to 120 characters",
        ));
    }
    if name.trim().is_empty() {
        return Err(ApiError::invalid_field(field, "must not be blank"));
    }
    if name.contains('\0') {
        return Err(ApiError::invalid_field(
            field,
            "holds a NUL character (U+0000)",
        ));
    }
    Ok(())
}

/// The body of `POST /ingest/upload/confirm`. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ConfirmUpload {
    /// The preview's `upload_id`.
    pub upload_id: Uuid,
    /// The dataset to write into (created when absent), 1..=120 characters, not blank.
    /// Default: the preview's `dataset_name`.
    #[schema(min_length = 1, max_length = 120, pattern = r"[^\s\x85\uFEFF]")]
    pub dataset_name: Option<String>,
    /// Column name → the type to coerce that column to instead of the inferred one; every
    /// name must be a column of the upload.
    pub schema_overrides: Option<BTreeMap<String, ColumnSchema>>,
    /// Recorded on the dataset.
    #[schema(max_length = 120)]
    pub owning_worker_type: Option<String>,
}

impl Validate for ConfirmUpload {}

#[derive(Debug, thiserror::Error)]
enum ConfirmError {
    #[error("not found")]
    NotFound,
    #[error("unknown column {0}")]
    UnknownColumn(String),
    #[error("{0}")]
    File(FileError),
    #[error("coercion")]
    Coercion(Vec<CoercionError>),
    #[error("too many columns")]
    TooManyColumns,
    #[error("{0}")]
    Internal(String),
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

fn coercion_error(errors: &[CoercionError]) -> ApiError {
    let count = if errors.len() >= COERCION_ERRORS_MAX {
        format!("at least {COERCION_ERRORS_MAX} values do")
    } else if errors.len() == 1 {
        "1 value does".to_owned()
    } else {
        format!("{} values do", errors.len())
    };
    let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
    ApiError::bad_request(format!(
        "nothing was written: {count} not fit the schema: {}",
        listed.join("; ")
    ))
}

/// Keeps an uploaded file (its rows read) until its confirm: the preview.
pub async fn stage(
    pool: &Pool,
    caller: &Caller,
    dataset_name: String,
    format: Format,
    content: &[u8],
    inference: Inference,
) -> Result<UploadPreview, ApiError> {
    let row_count = i32::try_from(inference.rows).unwrap_or(i32::MAX);
    let columns = inference.schema.to_stored();
    let mut conn = store::conn(pool).await?;
    let (upload_id, expires_at) = db::stage_upload(
        &mut conn,
        Owner::of(caller),
        NewUpload {
            dataset_name: &dataset_name,
            format: format.as_str(),
            content,
            row_count,
            columns: &columns,
        },
    )
    .await
    .map_err(|e| match e {
        db::StageError::TooManyPending => ApiError::conflict(format!(
            "at most {} uploads may wait for their confirm at once: confirm one, or wait until \
             one expires ({} hours after its preview)",
            db::PENDING_UPLOADS_MAX,
            db::UPLOAD_HOURS
        )),
        db::StageError::Database(e) => ApiError::internal_error(&e),
    })?;
    Ok(UploadPreview {
        success: true,
        upload_id,
        dataset_name,
        row_count,
        inferred_schema: inference.schema.to_json(),
        sample_rows: inference.sample(),
        expires_at,
        format: format.as_str().to_owned(),
    })
}

/// Writes the rows of a staged upload into a dataset of the caller, in one transaction (a
/// confirmed upload answers its first result again).
pub async fn confirm(
    pool: &Pool,
    caller: &Caller,
    body: ConfirmUpload,
) -> Result<DatasetIngestResult, ApiError> {
    if let Some(name) = &body.dataset_name {
        check_name("dataset_name", name)?;
    }
    let owner = Owner::of(caller);
    let overrides = body.schema_overrides.unwrap_or_default();
    let worker = body.owning_worker_type.as_deref();
    let mut conn = store::conn(pool).await?;
    let result = conn
        .transaction(async |conn| {
            let upload = db::lock_upload(conn, owner, body.upload_id)
                .await?
                .ok_or(ConfirmError::NotFound)?;
            if upload.confirmed_at.is_some() {
                let written = Written {
                    inserted: upload.inserted.unwrap_or(0),
                    updated: upload.updated.unwrap_or(0),
                };
                let dataset_id = upload.dataset_id.ok_or_else(|| {
                    ConfirmError::Internal("a confirmed upload lacks its dataset".into())
                })?;
                return Ok(DatasetIngestResult::new(dataset_id, written, true));
            }
            let mut schema = Schema::from_stored(&upload.column_types);
            for (name, column) in &overrides {
                if !schema.set(name, column.column_type()) {
                    return Err(ConfirmError::UnknownColumn(name.clone()));
                }
            }
            let format = Format::parse(&upload.format)
                .ok_or_else(|| ConfirmError::Internal(format!("format {}", upload.format)))?;
            let name = body.dataset_name.as_deref().unwrap_or(&upload.dataset_name);
            let dataset = db::lock_or_create(conn, owner, name).await?;
            let (tx, mut batches) = mpsc::channel(2);
            let content = upload.content;
            let coercion = tokio::task::spawn_blocking(move || {
                let mut sink = Coercion::new(schema, CONFIRM_BATCH, |batch| {
                    tx.blocking_send(batch).is_ok()
                });
                let read = read_rows(format, content.as_slice(), &mut sink);
                let finished = read.is_ok() && sink.finish();
                let invalid = match read {
                    Err(Halt::Invalid(e)) => Some(e),
                    _ => None,
                };
                (invalid, sink.errors, sink.written, finished)
            });
            let mut written = Written::default();
            while let Some(batch) = batches.recv().await {
                let w = db::write_rows(conn, dataset.id, batch).await?;
                written.inserted += w.inserted;
                written.updated += w.updated;
            }
            let (invalid, errors, values, finished) = coercion
                .await
                .map_err(|e| ConfirmError::Internal(e.to_string()))?;
            if let Some(e) = invalid {
                return Err(ConfirmError::File(e));
            }
            if !errors.is_empty() {
                return Err(ConfirmError::Coercion(errors));
            }
            if !finished {
                return Err(ConfirmError::Internal("the rows were not all read".into()));
            }
            let mut columns = Schema::from_stored(&dataset.column_types);
            columns
                .widen_all(&values)
                .map_err(|_| ConfirmError::TooManyColumns)?;
            db::update_after_write(
                conn,
                dataset.id,
                &columns.to_stored(),
                written.inserted,
                worker,
            )
            .await?;
            db::mark_confirmed(conn, upload.id, dataset.id, written).await?;
            Ok(DatasetIngestResult::new(dataset.id, written, false))
        })
        .await
        .map_err(|e| match e {
            ConfirmError::NotFound => {
                ApiError::not_found("no such upload (an upload expires 24 hours after its preview)")
            }
            ConfirmError::UnknownColumn(name) => ApiError::invalid_field(
                &format!("schema_overrides.{name}"),
                "is not a column of the upload",
            ),
            ConfirmError::File(e) => ApiError::invalid_field("file", &e.to_string()),
            ConfirmError::Coercion(errors) => coercion_error(&errors),
            ConfirmError::TooManyColumns => ApiError::conflict(format!(
                "the dataset would have more than {} columns, the most a dataset may have",
                crate::domain::datasets::COLUMNS_MAX
            )),
            ConfirmError::Internal(e) => ApiError::internal(e),
            ConfirmError::Database(e) => ApiError::internal_error(&e),
        })?;
    Ok(result)
}
