//! memory-api: persistent working memory for one user and the AI tools acting for them.

pub mod action_hooks;
pub mod app;
pub mod bridge;
pub mod byok;
pub mod competitor_watch;
pub mod config;
pub mod db;
pub mod domain;
pub mod embeddings;
pub mod http;
pub mod jobs;
pub mod model_runs;
pub mod oauth;
pub mod ops;
pub mod query_rewrite;
pub mod reembedding;
pub mod render_jobs;
pub mod render_video;
pub mod run_queue;
pub mod state;

pub use app::launch;
pub use state::AppState;

/// The service's name (logs, metrics, MIF provenance).
pub const SERVICE: &str = "memory-api";
pub use config::Settings;

/// The migrations of the memory database, embedded in the binary.
pub const MIGRATIONS: store::EmbeddedMigrations =
    diesel_migrations::embed_migrations!("../../migrations/memory");
