//! Rules of the memory service, without HTTP or SQL.

pub mod ai_cost;
pub mod bridge;
pub mod byok;
pub mod canonical;
pub mod confidence;
pub mod consolidation;
pub mod datasets;
pub mod drift;
pub mod inbox;
pub mod intake;
pub mod kernel;
pub mod marketing;
pub mod merge_patch;
pub mod mif;
pub mod mif_schema;
pub mod minting;
pub mod notes;
pub mod reembedding;
pub mod search;
pub mod signing;
pub mod state_text;
pub mod tags;
pub mod text;
pub mod tokens;
