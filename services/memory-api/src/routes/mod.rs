//! The `/api/v1` routes of memory-api, one module per resource.

pub mod ai_costs;
pub mod confidence;
pub mod consolidate;
pub mod datasets;
pub mod decisions;
pub mod events;
pub mod feed;
pub mod free_form;
pub mod identity;
pub mod mif_export;
pub mod mif_import;
pub mod mif_schema;
pub mod product_state;
pub mod products;
pub mod search;
pub mod signals;
pub mod uploads;

use actix_web::web;

/// Registers every gated route (mounted under `/api/v1`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    // First: actix takes the first resource whose path matches (whatever its methods), so the
    // static `/ingest/events`, `/ingest/datasets…` and `/ingest/upload…` paths must be
    // registered before any parameterised `/ingest/{project_id}`.
    events::configure(cfg);
    ai_costs::configure(cfg);
    datasets::configure(cfg);
    uploads::configure(cfg);
    confidence::configure(cfg);
    consolidate::configure(cfg);
    decisions::configure(cfg);
    feed::configure(cfg);
    free_form::configure(cfg);
    identity::configure(cfg);
    mif_export::configure(cfg);
    mif_import::configure(cfg);
    product_state::configure(cfg);
    products::configure(cfg);
    search::configure(cfg);
    signals::configure(cfg);
}
