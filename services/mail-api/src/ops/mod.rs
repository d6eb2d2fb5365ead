//! The application layer: one module per capability, holding its use cases, their
//! transactions and rules. The HTTP routes ([`crate::http`]) and the MCP tools ([`crate::mcp`])
//! are two thin doors to these functions; they call `db` and `domain`, never a door.

pub mod analytics;
pub mod confirmations;
pub mod contacts;
pub mod conversions;
pub mod events;
pub mod export;
pub mod gdpr;
pub mod hygiene;
pub mod input;
pub mod insights;
pub mod segments;
pub mod suppressions;
