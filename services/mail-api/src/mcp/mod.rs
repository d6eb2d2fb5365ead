//! The MCP tool server: one registry of tools ([`registry()`], declared in [`tools`]), called
//! the same way ([`call`]) over streamable HTTP at `/mcp` ([`stream`]) and the REST mirror at
//! `/api/mcp` ([`mirror`]); `/llms.txt` and `/llms-full.txt` are written from it ([`llms`]).

pub mod call;
pub mod catalog;
pub mod llms;
pub mod mirror;
pub mod registry;
pub mod schema;
pub mod stream;
pub mod tools;

use std::sync::OnceLock;

/// The service's registry: every tool of [`tools`], built once.
pub fn registry() -> &'static registry::Registry {
    static REGISTRY: OnceLock<registry::Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| registry::Registry::new(tools::all()))
}
