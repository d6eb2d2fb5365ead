//! mail-api over HTTP against the real PostgreSQL (and Redis where said).

mod auth;
mod common;
mod contract;
mod errors;
mod migrations;
mod rate_limits;
mod sites;
