//! The application layer: one module per capability, holding its use cases, their
//! transactions and rules. The HTTP routes ([`crate::http`]) and the MCP tools ([`crate::mcp`])
//! are two thin doors to these functions; they call `db` and `domain`, never a door.

pub mod ab_tests;
pub mod abuse_monitor;
pub mod account;
pub mod advisor;
pub mod analytics;
pub mod approvals;
pub mod campaigns;
pub mod chat_alerts;
pub mod confirmations;
pub mod contacts;
pub mod conversions;
pub mod deliverability;
pub mod delivery_ops;
pub mod delivery_settings;
pub mod dnsbl;
pub mod domains;
pub mod drafts;
pub mod emails;
pub mod events;
pub mod export;
pub mod forms;
pub mod gdpr;
pub mod generate;
pub mod hygiene;
pub mod idempotency;
pub mod input;
pub mod insights;
pub mod language_model;
pub mod notifications;
pub mod people;
pub mod preview;
pub mod provider_webhooks;
pub mod scoring;
pub mod segments;
pub mod send;
pub mod send_policy;
pub mod sites;
pub mod suppressions;
pub mod team;
pub mod templates;
pub mod tracking;
pub mod translate;
pub mod webhook_deliveries;
pub mod webhook_subscriptions;
