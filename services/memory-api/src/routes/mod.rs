//! The `/api/v1` routes of memory-api, one module per resource.

pub mod confidence;
pub mod consolidate;
pub mod decisions;
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

use actix_web::web;

/// Registers every gated route (mounted under `/api/v1`).
pub fn configure(cfg: &mut web::ServiceConfig) {
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
