//! Products: `GET /products`, `POST /products`, `GET /products/{name}`.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::owner::Owner;
use crate::db::owner_cache;
use crate::db::products::{self, NewProduct};
use crate::domain::signing;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/products")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(web::resource("/products/{name}").route(web::get().to(get)))
    .service(web::resource("/products/{name}/signing-secret").route(web::post().to(rotate_secret)));
}

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
#[utoipa::path(
    get,
    path = "/api/v1/products",
    operation_id = "listProducts",
    tag = "products",
    params(PageParams),
    responses(
        (status = 200, description = "A page of products", body = Page<Product>),
        (status = 400, description = "Invalid limit or cursor", body = http_kit::openapi::MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = http_kit::openapi::MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<Page<Product>>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = products::list(&mut conn, Owner::of(&caller), after, i64::from(limit) + 1).await?;
    let rows: Vec<Product> = rows.into_iter().map(Product::from).collect();
    Ok(web::Json(Page::from_rows(rows, limit, |p| p.id)))
}

/// Create a product.
#[utoipa::path(
    post,
    path = "/api/v1/products",
    operation_id = "createProduct",
    tag = "products",
    request_body = CreateProduct,
    responses(
        (status = 201, description = "Created; the signing secret is shown this once", body = CreatedProduct),
        (status = 400, description = "Invalid body", body = http_kit::openapi::MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = http_kit::openapi::MemoryError),
        (status = 409, description = "A product of that name exists", body = http_kit::openapi::MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateProduct>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let owner = Owner::of(&caller);
    let id = Uuid::now_v7();
    let secret = signing::new_secret();
    let sealed = signing::seal(&state.kek, id, &secret);
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
    Ok(HttpResponse::Created().json(CreatedProduct {
        product: Product::from(created),
        signing_secret: secret,
    }))
}

/// Get one product by name.
#[utoipa::path(
    get,
    path = "/api/v1/products/{name}",
    operation_id = "getProduct",
    tag = "products",
    params(("name" = String, Path, description = "Product name")),
    responses(
        (status = 200, description = "The product", body = Product),
        (status = 404, description = "No such product of the caller", body = http_kit::openapi::MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = http_kit::openapi::MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    name: web::Path<String>,
    synced: Option<auth::Synced>,
) -> Result<web::Json<Product>, ApiError> {
    let owner = Owner::of(&caller);
    state
        .products
        .find(synced, &owner_cache::key(owner), &name, async || {
            let mut conn = store::conn(&state.pool).await?;
            Ok::<_, ApiError>(products::find_by_name(&mut conn, owner, &name).await?)
        })
        .await?
        .map(|p| web::Json(p.into()))
        .ok_or_else(|| ApiError::not_found("no such product"))
}

/// Replace a product's signing secret; the new one is shown this once.
#[utoipa::path(
    post,
    path = "/api/v1/products/{name}/signing-secret",
    operation_id = "rotateProductSigningSecret",
    tag = "products",
    params(("name" = String, Path, description = "Product name")),
    responses(
        (status = 200, description = "The new secret; the replaced one keeps verifying signed project signals for 24 hours", body = RotatedSecret),
        (status = 403, description = "The credential lacks the write scope", body = http_kit::openapi::MemoryError),
        (status = 404, description = "No such product of the caller", body = http_kit::openapi::MemoryError),
    )
)]
pub async fn rotate_secret(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<web::Json<RotatedSecret>, ApiError> {
    let secret = signing::new_secret();
    let mut conn = store::conn(&state.pool).await?;
    let rotated_at = products::rotate_signing_secret(&mut conn, Owner::of(&caller), &name, |id| {
        signing::seal(&state.kek, id, &secret)
    })
    .await?
    .ok_or_else(|| ApiError::not_found("no such product"))?;
    Ok(web::Json(RotatedSecret {
        product_name: name.into_inner(),
        signing_secret: secret,
        rotated_at,
    }))
}
