//! The HTTP door of memory-api: the `/api/v1` routes (one module per resource), the OpenAPI
//! document and the dashboard pages. Handlers parse, authorize and shape the answer.

pub mod accounts;
pub mod agents;
pub mod ai_costs;
pub mod bridge;
pub mod byok;
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

/// Registers every gated route (mounted under `/api/v1`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    // First: actix takes the first resource whose path matches (whatever its methods), so the
    // static `/ingest/events`, `/ingest/datasets…` and `/ingest/upload…` paths must be
    // registered before any parameterised `/ingest/{project_id}`.
    events::configure(cfg);
    ai_costs::configure(cfg);
    byok::configure(cfg);
    datasets::configure(cfg);
    uploads::configure(cfg);
    confidence::configure(cfg);
    consolidate::configure(cfg);
    decisions::configure(cfg);
    feed::configure(cfg);
    free_form::configure(cfg);
    identity::configure(cfg);
    inbox_drafts::configure(cfg);
    intake::configure(cfg);
    mif_export::configure(cfg);
    mif_import::configure(cfg);
    product_state::configure(cfg);
    proposals::configure(cfg);
    render::configure(cfg);
    products::configure(cfg);
    scope::configure(cfg);
    accounts::configure(cfg);
    agents::configure(cfg);
    bridge::configure(cfg);
    content::configure(cfg);
    marketing::configure(cfg);
    render_video::configure(cfg);
    kernel_export::configure(cfg);
    search::configure(cfg);
    signals::configure(cfg);
    // Then `/workspaces/{id}…` after the static `/workspaces/…` paths.
    drift::configure(cfg);
    workspace_sync::configure(cfg);
    workspaces::configure(cfg);
}
