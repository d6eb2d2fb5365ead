//! The mail database: schema and queries, one module per table group.

pub mod analytics;
pub mod brand_voices;
pub mod campaigns;
pub mod confirmations;
pub mod contacts;
pub mod conversions;
pub mod credentials;
pub mod cron;
pub mod delivery;
pub mod emails;
pub mod events;
pub mod export;
pub mod gdpr;
pub mod idempotency;
pub mod notifications;
pub mod insights;
pub mod outbox;
pub mod schema;
pub mod sites;
pub mod suppressions;
pub mod team;
pub mod templates;
pub mod tenants;
pub mod usage;
pub mod webhooks;
