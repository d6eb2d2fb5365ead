//! mail-api over HTTP against the real PostgreSQL (and Redis where said).

mod analytics;
mod auth;
mod campaigns;
mod common;
mod contact_tools;
mod contacts;
mod contract;
mod conversions;
mod errors;
mod events;
mod export;
mod identify;
mod isolation;
mod mcp;
mod mcp_account;
mod mcp_analytics;
mod mcp_contacts;
mod migrations;
mod nul;
mod plan_limits;
mod rate_limits;
mod reading;
mod send;
mod sites;
mod suppressions;
mod templates;
