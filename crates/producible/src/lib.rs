//! Producible documents: the document tree (`ir`) render jobs are given, checked the way the
//! contract rules (`{"title", "blocks": [...]}`), with errors that name the failing path
//! (`blocks[3].rows[0][1]`). The JSON Schema of the same tree is
//! `proto-docs/producible-ir.schema.json` (a test keeps the two in agreement).

mod ir;
mod validate;

pub use ir::{Block, Document, Format, Run, Runs, plain};
pub use validate::{IrError, LIMITS, Limits, parse};

/// The JSON Schema of the tree, as committed.
pub const SCHEMA: &str = include_str!("../../../proto-docs/producible-ir.schema.json");
