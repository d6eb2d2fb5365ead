//! Rules of the memory service, without HTTP or SQL.

pub mod kernel;
pub mod merge_patch;
pub mod search;
pub mod signing;
pub mod tags;
pub mod tokens;
