//! mail-api: the email operations control plane.

pub mod app;
pub mod batch;
pub mod bounce_rate_watch;
pub mod bounces;
pub mod clock;
pub mod config;
pub mod db;
pub mod domain;
pub mod export;
pub mod flows;
pub mod housekeeping;
pub mod http;
pub mod jobs;
/// The model-backed tools' chat-completions client (`MAIL_LLM__…`), shared with memory-api.
pub use ::llm;
pub mod mcp;
pub mod oauth;
pub mod ops;
pub mod outbound;
pub mod own_domains;
pub mod scheduler;
pub mod sending;
pub mod social;
pub mod worker;

pub use app::{AppState, launch};

/// The service's OpenAPI document, generated from the routes: what describes the API beyond
/// the HTTP door (the MCP tools' input schemas take the components they name from it).
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    http::openapi::document()
}
pub use config::Settings;

/// The migrations of the mail database, embedded in the binary.
pub const MIGRATIONS: store::EmbeddedMigrations =
    diesel_migrations::embed_migrations!("../../migrations/mail");
