//! The mail database: schema and queries, one module per table group.

pub mod credentials;
pub mod schema;
pub mod sites;
pub mod tenants;
