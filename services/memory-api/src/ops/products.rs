//! Products: registering one (with its signing secret), listing, reading and rotating the
//! secret.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams};
use secrets::Kek;
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::db::owner_cache;
use crate::db::products::{self, NewProduct};
use crate::domain::signing;
use crate::state::AppState;

/// A named product of the caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct Product {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<products::Product> for Product {
    fn from(p: products::Product) -> Self {
        Self {
            id: p.id,
            name: p.name,
            description: p.description,
            status: p.status,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// A created product, with its signing secret (shown this once).
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedProduct {
    #[serde(flatten)]
    pub product: Product,
    /// The HMAC-SHA256 key for signed project signals (`X-Memory-Signature`). Shown only now
    /// and when rotated; stored encrypted.
    pub signing_secret: String,
}

/// A rotated signing secret (shown this once).
#[derive(Debug, Serialize, ToSchema)]
pub struct RotatedSecret {
    pub product_name: String,
    pub signing_secret: String,
    pub rotated_at: DateTime<Utc>,
}

/// Unknown fields are refused (400 naming the field).
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateProduct {
    /// 1..=100 characters, not blank (stored trimmed), unique per user and environment.
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// At most 2000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// Free text, 1..=50 characters, not blank (stored trimmed; default `active`).
    #[schema(min_length = 1, max_length = 50, pattern = r"[^\s\x85\uFEFF]")]
    pub status: Option<String>,
}

impl http_kit::Validate for CreateProduct {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        if let Some(status) = &mut self.status {
            http_kit::request::trim(status);
        }
        Ok(())
    }
}

/// List the caller's products.
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    page: &PageParams,
) -> Result<Page<Product>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(pool).await?;
    let rows = products::list(&mut conn, Owner::of(caller), after, i64::from(limit) + 1).await?;
    let rows: Vec<Product> = rows.into_iter().map(Product::from).collect();
    Ok(Page::from_rows(rows, limit, |p| p.id))
}

/// Replace a product's signing secret; the new one is shown this once.
pub async fn rotate_secret(
    state: &AppState,
    caller: &Caller,
    name: String,
) -> Result<RotatedSecret, ApiError> {
    let secret = signing::new_secret();
    let mut conn = store::conn(&state.pool).await?;
    let rotated_at = products::rotate_signing_secret(&mut conn, Owner::of(caller), &name, |id| {
        signing::seal(&state.kek, id, &secret)
    })
    .await?
    .ok_or_else(|| ApiError::not_found("no such product"))?;
    Ok(RotatedSecret {
        product_name: name,
        signing_secret: secret,
        rotated_at,
    })
}

/// Registers a product of the caller with a new signing secret (shown once, sealed at rest;
/// 409 for a name taken).
pub async fn create(
    pool: &Pool,
    kek: &Kek,
    caller: &Caller,
    body: &CreateProduct,
) -> Result<CreatedProduct, ApiError> {
    let mut conn = store::conn(pool).await?;
    let owner = Owner::of(caller);
    let id = Uuid::now_v7();
    let secret = signing::new_secret();
    let sealed = signing::seal(kek, id, &secret);
    let created = products::insert(
        &mut conn,
        NewProduct {
            id,
            user_id: owner.user_id,
            environment: owner.environment,
            name: body.name.trim(),
            description: body.description.as_deref(),
            status: body.status.as_deref().map_or("active", str::trim),
            signing_secret: &sealed,
        },
    )
    .await?
    .ok_or_else(|| ApiError::conflict(format!("a product named {:?} already exists", body.name)))?;
    Ok(CreatedProduct {
        product: Product::from(created),
        signing_secret: secret,
    })
}

/// The caller's product `name` (through this worker's cache; 404 if none).
pub async fn get(
    state: &AppState,
    caller: &Caller,
    name: &str,
    synced: Option<auth::Synced>,
) -> Result<Product, ApiError> {
    let owner = Owner::of(caller);
    state
        .products
        .find(synced, &owner_cache::key(owner), name, async || {
            let mut conn = store::conn(&state.pool).await?;
            Ok::<_, ApiError>(products::find_by_name(&mut conn, owner, name).await?)
        })
        .await?
        .map(Product::from)
        .ok_or_else(|| ApiError::not_found("no such product"))
}
