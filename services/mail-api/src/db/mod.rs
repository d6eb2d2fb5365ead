//! The mail database: schema and queries, one module per table group.

pub mod analytics;
pub mod campaigns;
pub mod confirmations;
pub mod contact_tools;
pub mod contacts;
pub mod conversions;
pub mod credentials;
pub mod delivery;
pub mod emails;
pub mod events;
pub mod export;
pub mod hygiene;
pub mod idempotency;
pub mod outbox;
pub mod schema;
pub mod sites;
pub mod suppressions;
pub mod templates;
pub mod tenants;
pub mod usage;
pub mod webhooks;
