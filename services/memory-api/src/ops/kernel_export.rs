//! The identity kernel's export: the stored kernel as the export routes answer it.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Pool;
use utoipa::{IntoParams, ToSchema};

use crate::db::kernels;
use crate::db::owner::Owner;

pub use crate::db::kernels::StoredKernel;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct KernelExportParams {
    /// `true`: sent as an attachment (`Content-Disposition` with a file name). Default `false`.
    pub download: Option<bool>,
}

impl Validate for KernelExportParams {}

/// The kernel, exported.
#[derive(Debug, Serialize, ToSchema)]
pub struct KernelExport {
    /// The kernel as stored (free-form; documented keys identity, products, constraints,
    /// model_preferences).
    #[schema(value_type = Object)]
    pub kernel: Value,
    /// Its deterministic Markdown rendering (what `GET /kernel/export/markdown` answers); null
    /// for an empty kernel.
    pub markdown: Option<String>,
    /// o200k_base tokens of `markdown`.
    pub token_count: i32,
    pub version: i32,
    pub updated_at: DateTime<Utc>,
    pub exported_at: DateTime<Utc>,
}

/// The caller's stored kernel (404 before the first write).
pub async fn kernel(pool: &Pool, caller: &Caller) -> Result<StoredKernel, ApiError> {
    let mut conn = store::conn(pool).await?;
    kernels::find(&mut conn, Owner::of(caller))
        .await?
        .ok_or_else(|| ApiError::not_found("no identity kernel yet: PUT one first"))
}
