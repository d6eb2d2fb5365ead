//! The memory database: schema and queries, one module per table group.

pub mod action_proposals;
pub mod agents;
pub mod bridge;
pub mod byok;
pub mod competitor_snapshots;
pub mod competitor_watches;
pub mod confidence;
pub mod consolidation;
pub mod credentials;
pub mod datasets;
pub mod decisions;
pub mod embeddings;
pub mod events;
pub mod feed;
pub mod free_form;
pub mod inbox_drafts;
pub mod intake;
pub mod kernels;
pub mod leads;
pub mod mif;
pub mod mif_import;
pub mod model_runs;
pub mod owner;
pub mod owner_cache;
pub mod product_states;
pub mod products;
pub mod render_files;
pub mod render_jobs;
pub mod render_video;
pub mod schema;
pub mod search;
pub mod signals;
pub mod sql;
pub mod users;
pub mod view;
pub mod workspace_sync;
pub mod workspaces;

use auth::Environment;

/// The stored name of an environment.
pub fn env_str(environment: Environment) -> &'static str {
    environment.as_str()
}
