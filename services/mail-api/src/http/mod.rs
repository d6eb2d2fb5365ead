//! The HTTP door of mail-api: the `/api/v1` routes (one module per resource) and the OpenAPI
//! document. Handlers parse, authorize and shape the answer.

pub mod account;
pub mod analytics;
pub mod body;
pub mod campaign_schedule;
pub mod campaign_steps;
pub mod campaigns;
pub mod chat_alerts;
pub mod contact_quality;
pub mod contacts;
pub mod conversions;
pub mod delivery_ops;
pub mod delivery_settings;
pub mod domains;
pub mod emails;
pub mod enrollments;
pub mod events;
pub mod export;
pub mod export_full;
pub mod gdpr;
pub mod generate;
pub mod groups;
pub mod hygiene;
pub mod idempotency;
pub mod identify;
pub mod insights;
pub mod landing;
pub mod notifications;
pub mod openapi;
pub mod preview;
pub mod segment_description;
pub mod segments;
pub mod send;
pub mod send_policy;
pub mod sites;
pub mod suppressions;
pub mod team;
pub mod templates;
pub mod tracking;
pub mod webhook_deliveries;
pub mod webhook_subscriptions;
pub mod webhooks;

use actix_web::middleware::from_fn;
use actix_web::web;

/// Registers every gated route (mounted under `/api/v1`), each held to its tool group
/// ([`groups`]).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("")
            .wrap(from_fn(groups::enforce))
            .configure(routes),
    );
}

fn routes(cfg: &mut web::ServiceConfig) {
    // First: `/templates/validate`, `/emails/preview` and `/emails/generate` before
    // `/templates/{id}` and `/emails/{id}` could take them.
    preview::configure(cfg);
    generate::configure(cfg);
    sites::configure(cfg);
    send_policy::configure(cfg);
    identify::configure(cfg);
    events::configure(cfg);
    conversions::configure(cfg);
    contacts::configure(cfg);
    hygiene::configure(cfg);
    campaign_schedule::configure(cfg);
    campaigns::configure(cfg);
    segments::configure(cfg);
    campaign_steps::configure(cfg);
    enrollments::configure(cfg);
    templates::configure(cfg);
    suppressions::configure(cfg);
    send::configure(cfg);
    emails::configure(cfg);
    delivery_settings::configure(cfg);
    domains::configure(cfg);
    analytics::configure(cfg);
    export::configure(cfg);
    export_full::configure(cfg);
    account::configure(cfg);
    gdpr::configure(cfg);
    team::configure(cfg);
    notifications::configure(cfg);
    insights::configure(cfg);
    delivery_ops::configure(cfg);
    webhook_subscriptions::configure(cfg);
    webhook_deliveries::configure(cfg);
    chat_alerts::configure(cfg);
}
