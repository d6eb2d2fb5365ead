//! Products: `GET /products`, `POST /products`, `GET /products/{name}`.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::{ApiError, Page, PageParams};
use http_kit::{Route, route};

use crate::ops::products::{self as ops, CreateProduct, CreatedProduct, Product, RotatedSecret};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(get),
    route!(rotate_secret),
];

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
    ops::list(&state.pool, &caller, &page).await.map(web::Json)
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
    let created = ops::create(&state.pool, &state.kek, &caller, &body).await?;
    Ok(HttpResponse::Created().json(created))
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
    ops::get(&state, &caller, &name, synced)
        .await
        .map(web::Json)
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
    ops::rotate_secret(&state, &caller, name.into_inner())
        .await
        .map(web::Json)
}
