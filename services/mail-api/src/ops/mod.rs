//! The application layer: one module per capability, holding its use cases, their
//! transactions and rules. The HTTP routes ([`crate::http`]) and the MCP tools ([`crate::mcp`])
//! are two thin doors to these functions; they call `db` and `domain`, never a door.

pub mod account;
pub mod campaigns;
pub mod chat_alerts;
pub mod delivery_ops;
pub mod delivery_settings;
pub mod domains;
pub mod emails;
pub mod generate;
pub mod idempotency;
pub mod notifications;
pub mod preview;
pub mod provider_webhooks;
pub mod send;
pub mod send_policy;
pub mod sites;
pub mod team;
pub mod templates;
pub mod tracking;
pub mod webhook_deliveries;
pub mod webhook_subscriptions;
