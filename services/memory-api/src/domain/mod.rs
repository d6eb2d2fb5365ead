//! Rules of the memory service, without HTTP or SQL.

pub mod confidence;
pub mod kernel;
pub mod merge_patch;
pub mod search;
pub mod signing;
pub mod state_text;
pub mod tags;
pub mod tokens;
