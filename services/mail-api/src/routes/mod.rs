//! The `/api/v1` routes of mail-api, one module per resource.

pub mod sites;

use actix_web::web;

/// Registers every gated route (mounted under `/api/v1`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    sites::configure(cfg);
}
