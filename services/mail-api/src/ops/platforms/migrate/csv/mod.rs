//! Imports of other platforms' CSV exports (`POST /platforms/imports/csv`,
//! `import_platform_csv`): Mailchimp's audience export (its ZIP of subscribed, unsubscribed
//! and cleaned members, or one of those files) or a generic file read through a column
//! mapping. The upload's headers are checked when it is posted; the file is stored with the
//! run (`platform_import_files`) and imported by the `platform.migrate` job like a platform's
//! account: suppressions first, then contacts, a page of rows at a time from the cursor each
//! page saves ([`run`]).

mod columns;
mod run;
mod source;

use std::collections::BTreeMap;

use base64::Engine as _;
use http_kit::{ApiError, MAX_UPLOAD_BODY, Validate};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{ImportKind, ImportSource, PlatformImport, queued_run};
use crate::AppState;
use crate::db::platform_imports::{self, ImportFile};
use crate::flows;
use crate::ops::idempotency::{Answer, IdempotencyKey, Idempotent};
use source::{Packing, Upload};

/// The layout of an uploaded export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CsvLayout {
    /// Mailchimp's audience export: its ZIP of `subscribed_members_export_*.csv`,
    /// `unsubscribed_members_export_*.csv` and `cleaned_members_export_*.csv`, or one of those
    /// files, each file's kind told by its columns (`UNSUB_TIME`: unsubscribed, `CLEAN_TIME`:
    /// cleaned, else subscribed). Each needs an `Email Address` column.
    Mailchimp,
    /// Any CSV file (or a ZIP of them) with a header row, read through `mapping`.
    Generic,
}

impl CsvLayout {
    fn as_str(self) -> &'static str {
        match self {
            Self::Mailchimp => "mailchimp",
            Self::Generic => "generic",
        }
    }

    fn parse(stored: &str) -> Option<Self> {
        [Self::Mailchimp, Self::Generic]
            .into_iter()
            .find(|l| l.as_str() == stored)
    }

    /// The run's `platform`, and the attribution's.
    fn source(self) -> ImportSource {
        match self {
            Self::Mailchimp => ImportSource::Mailchimp,
            Self::Generic => ImportSource::Csv,
        }
    }
}

/// Longest column name a mapping names.
const COLUMN_MAX: usize = 200;

/// The generic layout's columns: each of our fields (`email` required) to the header of the
/// CSV column that holds it (compared after trimming; the first of two same-named columns).
/// Columns not named here are not imported. Unknown fields are refused.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CsvMapping {
    /// The column of the email address. 1..=200 characters, not blank (each column name is
    /// trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub email: String,
    /// 1..=200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub first_name: Option<String>,
    /// 1..=200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub last_name: Option<String>,
    /// A column of tags separated by commas, each possibly quoted (`"Tag A","Tag B"`, as
    /// Mailchimp writes them). 1..=200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub tags: Option<String>,
    /// A column whose cells are `subscribed` or `unsubscribed` (any case; empty:
    /// subscribed). Unsubscribed rows are suppressed (before any contact is imported) and not
    /// imported as contacts; another value is that row's error. 1..=200 characters, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub status: Option<String>,
    #[schema(schema_with = properties_schema)]
    pub properties: Option<BTreeMap<String, String>>,
}

fn properties_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "Contact properties: a property's name (1..=100 characters, not blank, not \
             `imported_from`, the attribution's) to its column (1..=200 characters, not blank); \
             at most 100. Cell values are kept as strings; empty cells are not kept.",
        ))
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(100))
                .pattern(Some(http_kit::request::NOT_BLANK)),
        ))
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(COLUMN_MAX))
                .pattern(Some(http_kit::request::NOT_BLANK)),
        ))
        .max_properties(Some(100))
        .build()
}

/// A CSV export to import into a site. Exactly one of `csv` and `zip_base64`. The whole body
/// is at most 10 MiB (larger: 400 `PAYLOAD_TOO_LARGE`; through MCP a tool call is at most
/// 1 MiB). Every CSV file needs a header row, checked here: a file without the layout's email
/// column, or a mapping naming a column the file lacks, is 400 naming the field. Rows are
/// checked when imported: a row that cannot be (an invalid address, an unknown status) is a
/// per-record error of the run, naming its line, never its content. Unknown fields are
/// refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportPlatformCsv {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): imported contacts are
    /// subscribed to it.
    pub site_id: Uuid,
    pub layout: CsvLayout,
    /// The CSV file as text (UTF-8, comma-separated, quoted as RFC 4180). At most 10 MiB.
    #[schema(min_length = 1, max_length = 10485760)]
    pub csv: Option<String>,
    /// A ZIP archive, base64-encoded (standard alphabet, padded), of CSV files (entries whose
    /// names end in `.csv`, at most 20, each decompressing to at most 100 MiB; other entries
    /// are left out), imported in the archive's order. At most 10 MiB.
    #[schema(min_length = 1, max_length = 10485760)]
    pub zip_base64: Option<String>,
    /// Required with the `generic` layout, refused with `mailchimp`.
    pub mapping: Option<CsvMapping>,
}

impl Validate for ImportPlatformCsv {
    fn validate(&mut self) -> Result<(), ApiError> {
        match (&self.csv, &self.zip_base64) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_field(
                    "zip_base64",
                    "give either csv or zip_base64, not both",
                ));
            }
            (None, None) => {
                return Err(ApiError::invalid_field(
                    "csv",
                    "is required (or zip_base64)",
                ));
            }
            _ => {}
        }
        match (self.layout, &mut self.mapping) {
            (CsvLayout::Generic, None) => Err(ApiError::invalid_field(
                "mapping",
                "is required with the generic layout",
            )),
            (CsvLayout::Mailchimp, Some(_)) => Err(ApiError::invalid_field(
                "mapping",
                "is only for the generic layout (Mailchimp's columns are known)",
            )),
            (CsvLayout::Generic, Some(mapping)) => mapping.check(),
            (CsvLayout::Mailchimp, None) => Ok(()),
        }
    }
}

impl CsvMapping {
    fn check(&mut self) -> Result<(), ApiError> {
        let blank = |field: &str| ApiError::invalid_field(field, "must not be blank");
        self.email = self.email.trim().to_owned();
        if self.email.is_empty() {
            return Err(blank("mapping.email"));
        }
        for (field, column) in [
            ("first_name", &mut self.first_name),
            ("last_name", &mut self.last_name),
            ("tags", &mut self.tags),
            ("status", &mut self.status),
        ] {
            if let Some(name) = column {
                *name = name.trim().to_owned();
                if name.is_empty() {
                    return Err(blank(&format!("mapping.{field}")));
                }
            }
        }
        for (name, column) in self.properties.iter_mut().flatten() {
            let field = format!("mapping.properties.{name}");
            if name.trim().is_empty() || name == "imported_from" || name.chars().count() > 100 {
                return Err(ApiError::invalid_field(
                    &field,
                    "a property name is 1..=100 characters, not blank, not imported_from",
                ));
            }
            *column = column.trim().to_owned();
            if column.is_empty() {
                return Err(blank(&field));
            }
        }
        Ok(())
    }
}

/// The upload of `req`, decoded (its headers not yet read).
fn upload(req: &ImportPlatformCsv) -> Result<(Upload, &'static str), ApiError> {
    let (packing, content, field) = match (&req.csv, &req.zip_base64) {
        (Some(csv), _) => (Packing::Csv, csv.as_bytes().to_vec(), "csv"),
        (None, Some(encoded)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .map_err(|e| {
                    ApiError::invalid_field("zip_base64", &format!("is not base64: {e}"))
                })?;
            (Packing::Zip, bytes, "zip_base64")
        }
        (None, None) => return Err(ApiError::invalid_field("csv", "is required")),
    };
    if content.len() > MAX_UPLOAD_BODY {
        let mut err = ApiError::payload_too_large(MAX_UPLOAD_BODY);
        err.message = format!("{field}: exceeds {MAX_UPLOAD_BODY} bytes (10 MiB)").into();
        return Err(err.with_details(json!({ "field": field })));
    }
    Ok((
        Upload {
            layout: req.layout,
            packing,
            mapping: req.mapping.clone(),
            content,
        },
        field,
    ))
}

/// The route `Idempotency-Key`s are scoped to.
const ROUTE: &str = "POST /api/v1/platforms/imports/csv";

/// Starts importing a CSV export into a site (`POST /platforms/imports/csv`,
/// `import_platform_csv`): every header checked, then the run and its file recorded and its
/// job published through the outbox, in one transaction; answered 202. A retry with the same
/// `Idempotency-Key` answers the first run again.
pub async fn import_platform_csv(
    state: &AppState,
    project_id: Uuid,
    req: &ImportPlatformCsv,
    key: &IdempotencyKey,
) -> Result<Answer, ApiError> {
    let (upload, field) = upload(req)?;
    let upload = tokio::task::spawn_blocking(move || {
        upload.parts().map(|_| upload).map_err(|e| {
            let field = if e.field.is_empty() { field } else { &e.field };
            ApiError::invalid_field(field, &e.problem)
        })
    })
    .await
    .map_err(ApiError::internal)??;
    let idempotent = Idempotent::new(project_id, ROUTE, key, req)?;
    let source = req.layout.source();
    let run = queued_run(
        project_id,
        None,
        req.site_id,
        source.as_str(),
        ImportKind::Csv,
    );
    let file = ImportFile {
        import_id: run.id,
        project_id,
        layout: req.layout.as_str().to_owned(),
        format: match upload.packing {
            Packing::Csv => "csv",
            Packing::Zip => "zip",
        }
        .to_owned(),
        mapping: req.mapping.as_ref().map(serde_json::to_value).transpose()?,
        content: upload.content,
    };
    crate::db::transaction::run(&state.pool, async |conn| {
        if let Some(replay) = idempotent.replay(conn).await? {
            return Ok(replay);
        }
        flows::require_site(conn, project_id, req.site_id).await?;
        platform_imports::insert(conn, &run).await?;
        platform_imports::insert_file(conn, &file).await?;
        let answer = PlatformImport::new(run.clone())?;
        idempotent.answer(conn, 202, &answer).await
    })
    .await
}

/// A stored file as the job reads it.
fn stored_upload(file: ImportFile) -> Result<Upload, String> {
    Ok(Upload {
        layout: CsvLayout::parse(&file.layout)
            .ok_or_else(|| format!("stored layout {:?}", file.layout))?,
        packing: match file.format.as_str() {
            "zip" => Packing::Zip,
            _ => Packing::Csv,
        },
        mapping: file
            .mapping
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| format!("stored mapping: {e}"))?,
        content: file.content,
    })
}
