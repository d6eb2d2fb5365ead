//! The MIF 0.1 export: the caller's memory written as one canonical document, page by page,
//! with its checksum computed as it goes.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::ApiError;
use ring::digest::{Context, SHA256};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Pool;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::SERVICE;
use crate::db::owner::Owner;
use crate::db::view::View;
use crate::db::{free_form, kernels, mif as db};
use crate::domain::{canonical, mif};

const PAGE: i64 = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    IdentityOnly,
    IdentityCorpus,
    Full,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IdentityOnly => "identity_only",
            Self::IdentityCorpus => "identity_corpus",
            Self::Full => "full",
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    /// `identity_only` (the kernel), `identity_corpus` (and free-form memory) or `full` (and
    /// decisions, with the products they name under `metadata.products`). Default `full`.
    #[param(inline)]
    pub scope: Option<Scope>,
    /// The workspace to export (one of the caller's): its decisions and corpus entries and the
    /// account-wide ones. Default: the credential's active workspace (see `GET /scope`); with
    /// none, the whole account. Recorded in `provenance`.
    #[param(
        pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    pub workspace_id: Option<Uuid>,
    /// `true`: sent as an attachment (`Content-Disposition` with a file name). Default `false`.
    pub download: Option<bool>,
}

impl http_kit::Validate for ExportParams {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    Decisions,
    Middle,
    Corpus,
    Close,
    Done,
}

/// Writes the document chunk by chunk, hashing every canonical byte.
pub struct Writer {
    pool: Pool,
    user_id: Uuid,
    environment: &'static str,
    /// What the export sees (see [`View`]).
    workspace_id: Option<Uuid>,
    scope: Scope,
    kernel: Value,
    metadata: Option<Value>,
    provenance: Value,
    hasher: Context,
    phase: Phase,
    /// The last id written in the current list.
    after: Option<Uuid>,
    wrote_member: bool,
}

impl Writer {
    fn view(&self) -> View<'static> {
        View {
            owner: Owner {
                user_id: self.user_id,
                environment: self.environment,
            },
            workspace: self.workspace_id,
        }
    }

    /// Ends the document where it is (after a failure: nothing more is written).
    pub fn stop(&mut self) {
        self.phase = Phase::Done;
    }

    fn member(&mut self, out: &mut Vec<u8>, key: &str) {
        if self.wrote_member {
            out.push(b',');
        }
        self.wrote_member = true;
        out.extend_from_slice(format!("\"{key}\":").as_bytes());
    }

    /// The next chunk; `None` at the end.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>, String> {
        let mut out = Vec::new();
        match self.phase {
            Phase::Open => {
                out.push(b'{');
                if self.scope == Scope::Full {
                    self.member(&mut out, "decisions");
                    out.push(b'[');
                    self.phase = Phase::Decisions;
                } else {
                    self.phase = Phase::Middle;
                }
            }
            Phase::Decisions => {
                let mut conn = store::conn(&self.pool).await.map_err(|e| e.to_string())?;
                let page = db::decisions_page(&mut conn, self.view(), self.after, PAGE)
                    .await
                    .map_err(|e| e.to_string())?;
                for d in &page {
                    if self.after.is_some() {
                        out.push(b',');
                    }
                    let item = mif::decision_json(
                        d.id,
                        &d.decision,
                        d.reasoning.as_deref(),
                        &d.tags,
                        &d.product_name,
                        &d.affects_products,
                        d.decided_at,
                    );
                    canonical::write(&item, &mut out);
                    self.after = Some(d.id);
                }
                if (page.len() as i64) < PAGE {
                    out.push(b']');
                    self.after = None;
                    self.phase = Phase::Middle;
                }
            }
            Phase::Middle => {
                self.member(&mut out, "identity_kernel");
                canonical::write(&self.kernel, &mut out);
                if let Some(metadata) = self.metadata.take() {
                    self.member(&mut out, "metadata");
                    canonical::write(&metadata, &mut out);
                }
                self.member(&mut out, "mif_version");
                canonical::write(&Value::String(mif::VERSION.to_owned()), &mut out);
                if self.scope == Scope::IdentityOnly {
                    self.phase = Phase::Close;
                } else {
                    self.member(&mut out, "user_corpus");
                    out.push(b'[');
                    self.phase = Phase::Corpus;
                }
            }
            Phase::Corpus => {
                let mut conn = store::conn(&self.pool).await.map_err(|e| e.to_string())?;
                let page = free_form::page(&mut conn, self.view(), self.after, PAGE)
                    .await
                    .map_err(|e| e.to_string())?;
                for e in &page {
                    if self.after.is_some() {
                        out.push(b',');
                    }
                    let item = mif::corpus_json(
                        e.id,
                        &e.content,
                        &e.tags,
                        e.source.as_deref(),
                        &e.metadata,
                        e.created_at,
                    );
                    canonical::write(&item, &mut out);
                    self.after = Some(e.id);
                }
                if (page.len() as i64) < PAGE {
                    out.push(b']');
                    self.phase = Phase::Close;
                }
            }
            Phase::Close => {
                // The canonical content ends where provenance begins.
                self.hasher.update(b"}");
                let digest = std::mem::replace(&mut self.hasher, Context::new(&SHA256)).finish();
                let mut provenance = std::mem::take(&mut self.provenance);
                provenance["content_sha256"] = Value::String(hex::encode(digest.as_ref()));
                out.extend_from_slice(b",\"provenance\":");
                canonical::write(&provenance, &mut out);
                out.push(b'}');
                self.phase = Phase::Done;
                return Ok(Some(out));
            }
            Phase::Done => return Ok(None),
        }
        self.hasher.update(&out);
        Ok(Some(out))
    }
}

/// The checksum of a MIF document as `provenance.content_sha256` states it: the SHA-256 of
/// the document without `provenance`, canonical.
pub fn content_sha256(document: &Value) -> String {
    let mut content = document.clone();
    if let Some(members) = content.as_object_mut() {
        members.remove("provenance");
    }
    let mut bytes = Vec::new();
    canonical::write(&content, &mut bytes);
    hex::encode(ring::digest::digest(&SHA256, &bytes).as_ref())
}

/// An export under way: its [`Writer`], and what the answer's headers name.
pub struct Export {
    pub writer: Writer,
    pub scope: Scope,
    pub exported_at: DateTime<Utc>,
}

/// The caller's export: the small parts read at once (so a database failure is still a
/// 500), the rest written page by page by the [`Writer`].
pub async fn export(
    pool: &Pool,
    caller: &Caller,
    scope: Scope,
    workspace_id: Option<Uuid>,
) -> Result<Export, ApiError> {
    let owner = Owner::of(caller);
    let exported_at = Utc::now();
    // The small parts are read before the answer starts, so a database failure is still a 500.
    let mut conn = store::conn(pool).await?;
    let workspace_id = crate::ops::scope::view(&mut conn, caller, workspace_id)
        .await?
        .workspace;
    let kernel = kernels::find(&mut conn, owner)
        .await?
        .map_or_else(|| json!({}), |k| k.kernel);
    let metadata = if scope == Scope::Full {
        let products: Vec<Value> = db::product_records(&mut conn, owner)
            .await?
            .into_iter()
            .map(|(name, description, status)| {
                json!({"name": name, "description": description, "status": status})
            })
            .collect();
        Some(json!({ "products": products }))
    } else {
        None
    };
    drop(conn);
    let provenance = json!({
        "exported_at": mif::timestamp_json(exported_at),
        "service": SERVICE,
        "service_version": env!("CARGO_PKG_VERSION"),
        "scope": scope.as_str(),
        "workspace_id": workspace_id,
    });
    let writer = Writer {
        pool: pool.clone(),
        user_id: owner.user_id,
        environment: owner.environment,
        workspace_id,
        scope,
        kernel,
        metadata,
        provenance,
        hasher: Context::new(&SHA256),
        phase: Phase::Open,
        after: None,
        wrote_member: false,
    };
    Ok(Export {
        writer,
        scope,
        exported_at,
    })
}
