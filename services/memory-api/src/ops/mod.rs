//! The application layer: one module per capability, holding its use cases, their
//! transactions and rules. The HTTP routes ([`crate::http`]) are a thin door to these
//! functions; they call `db` and `domain`, never a door.

pub mod accounts;
pub mod agents;
pub mod ai_costs;
pub mod bridge;
pub mod byok;
pub mod competitor_watch_schedule;
pub mod competitor_watches;
pub mod confidence;
pub mod consolidate;
pub mod content;
pub mod datasets;
pub mod decisions;
pub mod drift;
pub mod events;
pub mod feed;
pub mod free_form;
pub mod identity;
pub mod inbox_drafts;
pub mod intake;
pub mod kernel_export;
pub mod leads;
pub mod marketing;
pub mod mif_export;
pub mod mif_import;
pub mod model_runs;
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
