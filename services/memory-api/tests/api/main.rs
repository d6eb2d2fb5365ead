//! memory-api over HTTP against the real PostgreSQL (and Redis where said).

mod auth;
mod common;
mod confidence;
mod consolidate;
mod contract;
mod datasets;
mod decisions;
mod embedding_pass;
mod errors;
mod events;
mod free_form;
mod identity;
mod isolation;
mod mif;
mod mif_staging;
mod migrations;
mod nul;
mod product_state;
mod products;
mod rate_limits;
mod reading;
mod search;
mod signals;
mod uploads;
