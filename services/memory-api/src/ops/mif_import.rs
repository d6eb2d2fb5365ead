//! The MIF 0.1 import: a document applied at once, or previewed and staged to be applied
//! later.

use auth::Caller;
use diesel_async::AsyncConnection as _;
use http_kit::ApiError;
use http_kit::request::Validate;
use secrets::Kek;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::mif as db;
use crate::db::mif_import::{self, ImportError, Outcome, Strategy};
use crate::db::owner::Owner;
use crate::db::view::View;
use crate::domain::mif_schema::MifDocument;
use crate::domain::{mif, notes};
use crate::state::AppState;

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
pub async fn apply(state: &AppState, caller: &Caller, id: Uuid) -> Result<ImportResult, ApiError> {
    let owner = Owner::of(caller);
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
    Ok(ImportResult::new("applied", Some(id), out))
}

/// Imports a MIF document into the caller's memory: applied at once in one transaction, or
/// (by default) previewed read-only and staged for `apply`.
pub async fn import(
    pool: &Pool,
    kek: &Kek,
    caller: &Caller,
    body: &ImportFields,
) -> Result<ImportResult, ApiError> {
    let (doc_value, root) = document(body);
    let strategy = Strategy::from(body.merge_strategy.unwrap_or_default());
    let apply_now = body.apply_immediately.unwrap_or(false);
    let doc =
        mif::parse(&doc_value, root).map_err(|e| ApiError::invalid_field(&e.path, &e.problem))?;
    let owner = Owner::of(caller);
    let mut conn = store::conn(pool).await?;
    let view = crate::ops::scope::view(&mut conn, caller, body.workspace_id).await?;
    if apply_now {
        let out = conn
            .transaction(async |conn| {
                mif_import::apply(conn, view, &doc, strategy, kek, root).await
            })
            .await
            .map_err(import_error)?;
        return Ok(ImportResult::new("applied", None, out));
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
    Ok(ImportResult::new("staged", Some(id), out))
}
