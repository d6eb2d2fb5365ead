//! `POST /memory/import-mif` (apply now, or stage) and `POST /memory/imports/{id}/apply`.

use actix_web::web;
use auth::WriteAccess;
use diesel_async::AsyncConnection as _;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::request::Validate;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::mif as db;
use crate::db::mif_import::{self, ImportError, Outcome, Strategy};
use crate::db::owner::Owner;
use crate::db::view::View;
use crate::domain::{mif, notes};
use crate::http::mif_schema::MifDocument;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/memory/import-mif")
            // A MIF document is an upload: the upload limit (10 MiB), not the 1 MiB of bodies.
            .app_data(http_kit::json_config(http_kit::MAX_UPLOAD_BODY))
            .route(web::post().to(import)),
    )
    .service(web::resource("/memory/imports/{id}/apply").route(web::post().to(apply)));
}

/// At most this many characters of `raw_content`.
const RAW_CONTENT_MAX: usize = 100_000;

/// How an import meets what the account already holds.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MergeStrategy {
    #[default]
    Merge,
    Replace,
    Append,
}

impl From<MergeStrategy> for Strategy {
    fn from(strategy: MergeStrategy) -> Self {
        match strategy {
            MergeStrategy::Merge => Self::Merge,
            MergeStrategy::Replace => Self::Replace,
            MergeStrategy::Append => Self::Append,
        }
    }
}

/// The members of `POST /memory/import-mif`'s body ([`ImportRequest`] adds the rule across
/// them).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ImportFields {
    /// A MIF 0.1 document (`proto-docs/mif-0.1.schema.json`).
    #[schema(value_type = Option<MifDocument>)]
    pub mif: Option<Value>,
    /// Plain text or Markdown notes (at most 100,000 characters), normalized into an
    /// identity-only import: headings open sections (text before any heading is `notes`); a
    /// section's items are its list entries, else its paragraphs; its key is the heading in
    /// snake_case; `identity` and `model_preferences` become objects of their `key: value`
    /// items (other items under `notes`), every other section an array of strings. Text
    /// with no items gives an empty kernel.
    #[schema(max_length = 100000)]
    pub raw_content: Option<String>,
    /// `merge` (default): kernel merge patch; entries and decisions added unless the same id
    /// or the same normalized text exists (each clash a line in `conflicts`). `replace`:
    /// kernel, corpus and decisions replaced (ids and times kept; a list absent from the
    /// document is left alone, an empty one empties it). `append`: everything added
    /// as new items; kernel keys only where absent (each kept key a line in `conflicts`).
    pub merge_strategy: Option<MergeStrategy>,
    /// Default false: the import is staged (nothing changes until
    /// `POST /memory/imports/{id}/apply`). A staged import can be applied for 24 hours, then
    /// it expires; an owner has at most 10 staged imports waiting at once.
    pub apply_immediately: Option<bool>,
    /// The workspace to import into (one of the caller's); default the credential's active
    /// workspace (see `GET /scope`), else account-wide.
    #[schema(schema_with = workspace_schema)]
    pub workspace_id: Option<Uuid>,
}

fn workspace_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "The workspace to import into (one of the caller's): its corpus entries and decisions \
         are recorded in it, `merge` compares texts with what it sees (its own and the \
         account-wide memory), and `replace` replaces its own entries and decisions only (a \
         kept id held elsewhere in the account is skipped, as a conflict). Default: the \
         credential's active workspace (see `GET /scope`), else account-wide. A staged import \
         keeps the workspace it was staged for, and goes with it if it is deleted. The \
         identity kernel is the account's.",
    )
}

/// The body of `POST /memory/import-mif`: its members, and exactly one of `mif` and
/// `raw_content` (a null member is an absent one), stated as `oneOf` so that the document says
/// it and the request extractor enforces it.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct ImportRequest(pub ImportFields);

impl Validate for ImportRequest {}

impl utoipa::PartialSchema for ImportRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, OneOfBuilder, Type};
        let only = |given: &str, given_schema: ObjectBuilder, absent: &str| {
            ObjectBuilder::new()
                .required(given)
                .property(given, given_schema)
                .property(absent, ObjectBuilder::new().schema_type(Type::Null))
        };
        let exactly_one = OneOfBuilder::new()
            .item(only(
                "mif",
                ObjectBuilder::new().schema_type(Type::Object),
                "raw_content",
            ))
            .item(only(
                "raw_content",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .max_length(Some(RAW_CONTENT_MAX)),
                "mif",
            ));
        AllOfBuilder::new()
            .item(ImportFields::schema())
            .item(exactly_one)
            .description(Some(
                "The body of `POST /memory/import-mif`: exactly one of `mif` and `raw_content` \
                 (a null member is an absent one).",
            ))
            .into()
    }
}

impl ToSchema for ImportRequest {
    fn name() -> std::borrow::Cow<'static, str> {
        "ImportRequest".into()
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        ImportFields::schemas(schemas);
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImportResult {
    /// `applied` or `staged`.
    pub status: String,
    /// The staged import's id (apply it at `/memory/imports/{id}/apply`); absent when applied
    /// immediately.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
    /// Staged: what applying now would import.
    pub corpus_imported: usize,
    pub decisions_imported: usize,
    /// One line per clash: the JSON path of the item or kernel key, and what was kept.
    pub conflicts: Vec<String>,
    /// Products named by the document that the account lacked, created by the import (their
    /// signing secrets are not shown: rotate one before signing project signals).
    pub products_created: Vec<String>,
}

impl ImportResult {
    fn new(status: &str, id: Option<Uuid>, out: Outcome) -> Self {
        Self {
            status: status.to_owned(),
            id,
            corpus_imported: out.corpus_imported,
            decisions_imported: out.decisions_imported,
            conflicts: out.conflicts,
            products_created: out.products_created,
        }
    }
}

fn import_error(err: ImportError) -> ApiError {
    match err {
        ImportError::Invalid(e) => ApiError::invalid_field(&e.path, &e.problem),
        ImportError::Database(e) => ApiError::internal_error(&e),
    }
}

/// The document to import and the JSON path it is found at.
fn document(body: &ImportFields) -> (Value, &'static str) {
    match (&body.mif, &body.raw_content) {
        (Some(doc), _) => (doc.clone(), "mif"),
        (None, text) => {
            let kernel = notes::to_kernel(text.as_deref().unwrap_or_default());
            let doc = json!({
                "mif_version": mif::VERSION,
                "provenance": {"source": "raw_content"},
                "identity_kernel": kernel,
            });
            (doc, "raw_content")
        }
    }
}

/// Import a MIF document (or raw notes), now or staged.
#[utoipa::path(
    post,
    path = "/api/v1/memory/import-mif",
    operation_id = "importMif",
    tag = "mif",
    request_body = ImportRequest,
    responses(
        (status = 200, description = "Applied (all or nothing, in one transaction), or staged: the document is checked and what applying it now would do is answered, without writing anything; it can be applied for 24 hours, then it expires", body = ImportResult),
        (status = 400, description = "Neither or both of mif and raw_content; an invalid document (the message names the JSON path, e.g. `mif.decisions[3].decision`); a kernel whose injection block would exceed 4,000 tokens; or a body over 10 MiB", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 409, description = "Staging only: the owner already has 10 staged imports waiting (unapplied and under 24 hours old), the most allowed (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn import(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ImportRequest>,
) -> Result<web::Json<ImportResult>, ApiError> {
    let ImportRequest(body) = body.into_inner();
    let (doc_value, root) = document(&body);
    let strategy = Strategy::from(body.merge_strategy.unwrap_or_default());
    let apply_now = body.apply_immediately.unwrap_or(false);
    let doc =
        mif::parse(&doc_value, root).map_err(|e| ApiError::invalid_field(&e.path, &e.problem))?;
    let owner = Owner::of(&caller);
    let kek = &state.kek;
    let mut conn = store::conn(&state.pool).await?;
    let view = crate::http::scope::view(&mut conn, &caller, body.workspace_id).await?;
    if apply_now {
        let out = conn
            .transaction(async |conn| {
                mif_import::apply(conn, view, &doc, strategy, kek, root).await
            })
            .await
            .map_err(import_error)?;
        return Ok(web::Json(ImportResult::new("applied", None, out)));
    }
    // Staged: what applying now would do, read in one snapshot without writing or locking
    // anything (it also catches what only the account can tell, such as the merged kernel's
    // budget, before anything is kept).
    let out = conn
        .build_transaction()
        .read_only()
        .repeatable_read()
        .run(async |conn| mif_import::preview(conn, view, &doc, strategy, root).await)
        .await
        .map_err(import_error)?;
    let id = db::insert_staged(
        &mut conn,
        owner,
        strategy.as_str(),
        &doc_value,
        view.workspace,
    )
    .await
    .map_err(|e| match e {
        db::StageError::TooManyPending => ApiError::conflict(format!(
            "at most {} staged imports may wait at once: apply one, or wait until one expires \
             ({} hours after it was staged)",
            db::PENDING_STAGED_MAX,
            db::STAGED_IMPORT_HOURS
        )),
        db::StageError::Database(e) => ApiError::internal_error(&e),
    })?;
    Ok(web::Json(ImportResult::new("staged", Some(id), out)))
}

#[derive(Debug, thiserror::Error)]
enum ApplyError {
    #[error("not found")]
    NotFound,
    #[error("already applied")]
    Applied,
    #[error("{0}")]
    Import(#[from] ImportError),
}

impl From<diesel::result::Error> for ApplyError {
    fn from(e: diesel::result::Error) -> Self {
        Self::Import(ImportError::Database(e))
    }
}

/// Apply a staged import (once, within 24 hours of staging).
#[utoipa::path(
    post,
    path = "/api/v1/memory/imports/{id}/apply",
    operation_id = "applyMifImport",
    tag = "mif",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The staged import's id")),
    responses(
        (status = 200, description = "Applied (all or nothing)", body = ImportResult),
        (status = 400, description = "The id is not a UUID, or the account changed so that the import no longer fits (e.g. the merged kernel's budget)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such import of the caller, or it was staged more than 24 hours ago (staged imports expire), or the workspace it was staged for was deleted", body = MemoryError),
        (status = 409, description = "The import was already applied", body = MemoryError),
    )
)]
pub async fn apply(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ImportResult>, ApiError> {
    let id = id.into_inner();
    let owner = Owner::of(&caller);
    let kek = &state.kek;
    let mut conn = store::conn(&state.pool).await?;
    let out = conn
        .transaction(async |conn| {
            let staged = db::lock(conn, owner, id)
                .await?
                .ok_or(ApplyError::NotFound)?;
            if staged.status != "staged" {
                return Err(ApplyError::Applied);
            }
            let root = if staged.document["provenance"]["source"] == "raw_content" {
                "raw_content"
            } else {
                "mif"
            };
            let doc = mif::parse(&staged.document, root).map_err(ImportError::Invalid)?;
            let strategy = Strategy::parse(&staged.merge_strategy).unwrap_or(Strategy::Merge);
            let view = View {
                owner,
                workspace: staged.workspace_id,
            };
            let out = mif_import::apply(conn, view, &doc, strategy, kek, root).await?;
            db::mark_applied(conn, owner, id).await?;
            Ok(out)
        })
        .await
        .map_err(|e| match e {
            ApplyError::NotFound => ApiError::not_found("no such import"),
            ApplyError::Applied => ApiError::conflict("this import was already applied"),
            ApplyError::Import(e) => import_error(e),
        })?;
    Ok(web::Json(ImportResult::new("applied", Some(id), out)))
}
