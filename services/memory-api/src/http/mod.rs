//! The HTTP door of memory-api: the `/api/v1` routes (one module per resource), the OpenAPI
//! document and the dashboard pages. Handlers parse, authorize and shape the answer.

pub mod accounts;
pub mod agents;
pub mod ai_costs;
pub mod bridge;
pub mod byok;
pub mod competitor_watches;
pub mod confidence;
pub mod consolidate;
pub mod content;
pub mod datasets;
pub mod decisions;
pub mod downloads;
pub mod drift;
pub mod events;
pub mod feed;
pub mod free_form;
pub mod identity;
pub mod inbox_drafts;
pub mod intake;
pub mod kernel_export;
pub mod landing;
pub mod leads;
pub mod marketing;
pub mod mif_export;
pub mod mif_import;
/// The MIF schema (declared in `domain`), where the binary and the contract test read it.
pub use crate::domain::mif_schema;
pub mod model_runs;
pub mod openapi;
pub mod pages;
pub mod product_state;
pub mod products;
pub mod proposals;
pub mod render;
pub mod render_video;
pub mod scope;
pub mod search;
pub mod signals;
pub mod uploads;
pub mod workspace_sync;
pub mod workspaces;

use actix_web::web;
use http_kit::Route;

/// Registers every gated route (mounted under `/api/v1`, a scope holding nothing else), as
/// [`http_kit::routes::mount_grouped`] groups them.
pub fn configure(cfg: &mut web::ServiceConfig) {
    http_kit::routes::mount_grouped(cfg, "/api/v1", ROUTES);
}

/// The `/api/v1` routes, each module's table (their order does not matter).
pub const ROUTES: &[&[Route]] = &[
    accounts::ROUTES,
    agents::ROUTES,
    ai_costs::ROUTES,
    bridge::ROUTES,
    byok::ROUTES,
    competitor_watches::ROUTES,
    confidence::ROUTES,
    consolidate::ROUTES,
    content::ROUTES,
    datasets::ROUTES,
    decisions::ROUTES,
    drift::ROUTES,
    events::ROUTES,
    feed::ROUTES,
    free_form::ROUTES,
    identity::ROUTES,
    inbox_drafts::ROUTES,
    intake::ROUTES,
    kernel_export::ROUTES,
    leads::ROUTES,
    marketing::ROUTES,
    mif_export::ROUTES,
    mif_import::ROUTES,
    product_state::ROUTES,
    products::ROUTES,
    proposals::ROUTES,
    render::ROUTES,
    render_video::ROUTES,
    scope::ROUTES,
    search::ROUTES,
    signals::ROUTES,
    uploads::ROUTES,
    workspace_sync::ROUTES,
    workspaces::ROUTES,
];
