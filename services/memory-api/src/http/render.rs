//! Producible documents: `POST /render/producibles/jobs` queues a render of a document tree
//! to the render worker; `GET /render/producibles/jobs/{jobId}/status` polls it.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Validate};
use rate_limit::policy::Tier;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::owner::Owner;
use crate::db::render_jobs::{self as db, Job, NewJob};
use crate::http::{downloads, scope};

pub const PRODUCIBLE: &str = "producible";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/render/producibles/jobs")
            // A tree may carry images: the upload limit (10 MiB), not the 1 MiB of bodies.
            .app_data(http_kit::json_config(http_kit::MAX_UPLOAD_BODY))
            .route(web::post().to(create)),
    )
    .service(web::resource("/render/producibles/jobs/{jobId}/status").route(web::get().to(status)));
}

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
    /// path (`ir.blocks[3].rows[0][1]`).
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
    serde_json::from_value(producible::inline_schema())
        .expect("the tree's schema is an OpenAPI schema")
}

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
    fn new(state: &AppState, req: &HttpRequest, job: &Job) -> Self {
        let signed_url = (job.status == "completed")
            .then(|| {
                job.object_key
                    .as_deref()
                    .and_then(objects::ObjectKey::parse)
            })
            .flatten()
            .map(|key| downloads::signed_url(state, req, &key));
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

fn location(id: Uuid) -> String {
    format!("/api/v1/render/producibles/jobs/{id}/status")
}

/// Queue the render of a document tree.
#[utoipa::path(
    post,
    path = "/api/v1/render/producibles/jobs",
    operation_id = "createProducibleJob",
    tag = "render",
    description = "Validates the document tree, records a job and queues it (RabbitMQ, \
        `render.job`) to the render worker, which produces the file with a library made for \
        its format and stores it. Poll the `Location` until `completed` (with `signedUrl`) or \
        `failed` (with `error`). A job whose worker died is delivered again and completes. \
        Needs the pro tier or above. The body may be up to 10 MiB.",
    request_body = ProducibleJobRequest,
    responses(
        (status = 202, description = "Queued: poll the `Location`", body = ProducibleJob,
            headers(("Location" = String, description = "`/api/v1/render/producibles/jobs/{jobId}/status`"))),
        (status = 400, description = "A field is invalid; an invalid tree names the path (`ir.blocks[3].rows[0][1]`)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    body: http_kit::Json<ProducibleJobRequest>,
) -> Result<HttpResponse, ApiError> {
    caller.require_tier(Tier::Pro)?;
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, &caller, body.workspace_id).await?;
    let format = body.format.format();
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
    Ok(HttpResponse::Accepted()
        .insert_header((header::LOCATION, location(job.id)))
        .json(ProducibleJob::new(&state, &req, &job)))
}

/// A producible render job.
#[utoipa::path(
    get,
    path = "/api/v1/render/producibles/jobs/{jobId}/status",
    operation_id = "getProducibleJobStatus",
    tag = "render",
    params(("jobId" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The job's id")),
    responses(
        (status = 200, description = "The job; `signedUrl` once `completed`", body = ProducibleJob),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "No such job of the caller (finished jobs are kept 30 days)", body = MemoryError),
    )
)]
pub async fn status(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<Uuid>,
) -> Result<web::Json<ProducibleJob>, ApiError> {
    caller.require_tier(Tier::Pro)?;
    let mut conn = store::conn(&state.pool).await?;
    let job = db::find(&mut conn, Owner::of(&caller), PRODUCIBLE, id.into_inner())
        .await?
        .ok_or_else(|| ApiError::not_found("no such render job"))?;
    Ok(web::Json(ProducibleJob::new(&state, &req, &job)))
}
