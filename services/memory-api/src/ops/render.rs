//! Producible documents: render jobs recorded for the render worker, and their status with a
//! signed download URL.

use auth::Caller;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::db::render_jobs::{self as db, Job, NewJob};
use crate::ops::scope;
use crate::state::AppState;

pub const PRODUCIBLE: &str = "producible";

/// The formats a document tree is produced in.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProducibleFormat {
    Pdf,
    Docx,
    Pptx,
    Xlsx,
    Csv,
    Svg,
    Html,
}

impl ProducibleFormat {
    fn format(self) -> producible::Format {
        match self {
            Self::Pdf => producible::Format::Pdf,
            Self::Docx => producible::Format::Docx,
            Self::Pptx => producible::Format::Pptx,
            Self::Xlsx => producible::Format::Xlsx,
            Self::Csv => producible::Format::Csv,
            Self::Svg => producible::Format::Svg,
            Self::Html => producible::Format::Html,
        }
    }
}

/// The body of `POST /render/producibles/jobs`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProducibleJobRequest {
    pub format: ProducibleFormat,
    /// The document tree `{"title", "blocks": [...]}`, as `proto-docs/producible-ir.schema.json`
    /// states it: title 1..=500 characters; at most 5000 blocks of type heading (level 1..=6,
    /// runs), paragraph (runs), list (ordered, 1..=1000 items of runs), table (header of
    /// 1..=50 cells of runs, at most 5000 rows with as many cells), code (language ≤ 40,
    /// text ≤ 200000), image (src: an https URL or a base64 `data:image/…` URI ≤ 1000000;
    /// alt ≤ 1000) or page_break. Runs: at most 500 of `{text ≤ 20000, bold?, italic?,
    /// code?, link? (http(s) or mailto)}`. A tree that breaks a rule answers 400 naming the
    /// path (`ir.blocks[3].rows[0][1]`). pdf, docx and pptx embed the pictures of PNG and
    /// JPEG `data:` URIs (at most 40,000,000 pixels; one that does not decode answers 400
    /// naming its `src`), with `alt` as the caption; an https URL or a gif, webp or svg
    /// picture prints as a captioned placeholder (the worker never fetches a URL). A pdf is
    /// printed in embedded TrueType fonts (by default DejaVu Sans: Latin, Greek, Cyrillic and
    /// more): a character no configured font has answers 400 naming the text's path.
    #[schema(schema_with = ir_schema)]
    pub ir: Value,
    /// The caller's id of the output this render is for (recorded, not interpreted).
    #[schema(schema_with = output_id_schema)]
    pub output_id: Option<Uuid>,
    /// The caller's id of the worker run this render is for (recorded, not interpreted).
    #[schema(schema_with = worker_run_id_schema)]
    pub worker_run_id: Option<Uuid>,
    /// One of the caller's workspaces; default the credential's active one.
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
}

/// The tree's JSON Schema (`proto-docs/producible-ir.schema.json`), inlined.
fn ir_schema() -> utoipa::openapi::schema::Schema {
    let mut schema = producible::inline_schema();
    schema["description"] = IR_RULES.into();
    serde_json::from_value(schema).expect("the tree's schema is an OpenAPI schema")
}

/// The rules of a tree beyond its schema, which the job's request checks too.
const IR_RULES: &str = "The document tree. Each table row has as many cells as its header. \
pdf, docx and pptx embed the pictures of PNG and JPEG data: URIs (at most 40,000,000 pixels; \
one that does not decode answers 400 naming its src), with alt as the caption; an https URL or \
a gif, webp or svg picture prints as a captioned placeholder (the worker never fetches a URL). \
A pdf is printed in the deployment's embedded TrueType fonts (by default DejaVu Sans: Latin, \
Greek, Cyrillic and more): a character none of them has answers 400 naming the text's path.";

fn output_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "The caller's id of the output this render is for (recorded, not interpreted).",
    )
}

fn worker_run_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "The caller's id of the worker run this render is for (recorded, not interpreted).",
    )
}

fn workspace_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "One of the caller's workspaces; default the credential's active one.",
    )
}

impl Validate for ProducibleJobRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        producible::parse(&self.ir).map(drop).map_err(|e| {
            let path = if e.path.is_empty() {
                "ir".to_owned()
            } else {
                format!("ir.{}", e.path)
            };
            ApiError::invalid_field(&path, &e.problem)
        })
    }
}

/// A producible render job.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProducibleJob {
    pub job_id: Uuid,
    /// `queued`, `rendering`, `completed` or `failed`.
    #[schema(pattern = "^(queued|rendering|completed|failed)$")]
    pub status: String,
    /// Once `completed`: a time-limited signed download URL (a fresh one on every poll).
    #[schema(format = "uri")]
    pub signed_url: Option<String>,
    /// pdf, docx, pptx, xlsx, csv, svg or html.
    pub format: String,
    /// document (pdf, docx), presentation (pptx), spreadsheet (xlsx, csv), image (svg) or
    /// web_page (html).
    pub producible_kind: String,
    /// Why the render failed (`failed`).
    pub error: Option<String>,
}

impl ProducibleJob {
    fn new(state: &AppState, base: &str, job: &Job) -> Self {
        let signed_url = (job.status == "completed")
            .then(|| {
                job.object_key
                    .as_deref()
                    .and_then(objects::ObjectKey::parse)
            })
            .flatten()
            .map(|key| state.downloads.signed_url(base, &key));
        let kind = producible::Format::parse(&job.format).map_or("document", |f| f.kind());
        Self {
            job_id: job.id,
            status: match job.status.as_str() {
                "running" => "rendering".to_owned(),
                other => other.to_owned(),
            },
            signed_url,
            format: job.format.clone(),
            producible_kind: kind.to_owned(),
            error: job.error.clone(),
        }
    }
}

/// What the worker could not print in `format`: a picture that does not decode (pdf, docx,
/// pptx embed them), a character the pdf fonts lack. 400 naming the path.
fn printable(state: &AppState, ir: &Value, format: producible::Format) -> Result<(), ApiError> {
    use producible::Format::{Docx, Pdf, Pptx};
    if !matches!(format, Pdf | Docx | Pptx) {
        return Ok(());
    }
    let refused =
        |e: producible::IrError| ApiError::invalid_field(&format!("ir.{}", e.path), &e.problem);
    let document = producible::parse(ir).map_err(refused)?;
    producible::images::check_pictures(&document).map_err(refused)?;
    if format == Pdf
        && let Some(e) = state.pdf_fonts.uncovered(&document)
    {
        return Err(refused(e));
    }
    Ok(())
}

/// Records a render job of the caller and publishes it to the render worker.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    base: &str,
    body: &ProducibleJobRequest,
) -> Result<ProducibleJob, ApiError> {
    let format = body.format.format();
    printable(state, &body.ir, format)?;
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, body.workspace_id).await?;
    let job = db::insert(
        &mut conn,
        view,
        NewJob {
            kind: PRODUCIBLE,
            format: format.as_str(),
            input: &serde_json::json!({
                "ir": body.ir,
                "output_id": body.output_id,
                "worker_run_id": body.worker_run_id,
            }),
        },
    )
    .await?;
    drop(conn);
    state
        .render_jobs
        .publish(&state.pool, job.id, job.user_id, None)
        .await;
    Ok(ProducibleJob::new(state, base, &job))
}

/// A render job of the caller (404 if none), with its download URL once completed.
pub async fn status(
    state: &AppState,
    caller: &Caller,
    base: &str,
    id: Uuid,
) -> Result<ProducibleJob, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let job = db::find(&mut conn, Owner::of(caller), PRODUCIBLE, id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such render job"))?;
    Ok(ProducibleJob::new(state, base, &job))
}
