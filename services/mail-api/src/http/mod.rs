//! The HTTP door of mail-api: the `/api/v1` routes (one module per resource) and the OpenAPI
//! document. Handlers parse, authorize and shape the answer.

pub mod ab_tests;
pub mod abuse_monitor;
pub mod account;
pub mod advisor;
pub mod analytics;
pub mod approvals;
pub mod automations;
pub mod body;
pub mod campaign_schedule;
pub mod campaign_steps;
pub mod campaigns;
pub mod chat_alerts;
pub mod commerce;
pub mod commerce_webhooks;
pub mod contact_quality;
pub mod contacts;
pub mod content;
pub mod conversions;
pub mod dashboard;
pub mod deliverability;
pub mod delivery_ops;
pub mod delivery_settings;
pub mod dnsbl;
pub mod domains;
pub mod drafts;
pub mod emails;
pub mod enrollments;
pub mod events;
pub mod export;
pub mod export_full;
pub mod form_pages;
pub mod forms;
pub mod gdpr;
pub mod generate;
pub mod groups;
pub mod hygiene;
pub mod idempotency;
pub mod identify;
pub mod insights;
pub mod landing;
pub mod language_model;
pub mod notifications;
pub mod openapi;
pub mod platform_imports;
pub mod platforms;
pub mod preview;
pub mod scoring;
pub mod segment_description;
pub mod segments;
pub mod send;
pub mod send_policy;
pub mod sites;
pub mod sms;
pub mod sms_webhooks;
pub mod social;
pub mod suppressions;
pub mod team;
pub mod templates;
pub mod tracking;
pub mod webhook_deliveries;
pub mod webhook_subscriptions;
pub mod webhooks;

use actix_web::middleware::from_fn;
use actix_web::web;
use http_kit::Route;

/// Registers every gated route (mounted under `/api/v1`, a scope holding nothing else), each
/// held to its tool group ([`groups`]).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("")
            .wrap(from_fn(groups::enforce))
            .configure(|cfg| http_kit::routes::mount_grouped(cfg, "/api/v1", ROUTES)),
    );
}

/// The `/api/v1` routes, each module's table (their order does not matter).
pub const ROUTES: &[&[Route]] = &[
    ab_tests::ROUTES,
    automations::ROUTES,
    abuse_monitor::ROUTES,
    scoring::ROUTES,
    dnsbl::ROUTES,
    deliverability::ROUTES,
    account::ROUTES,
    analytics::ROUTES,
    approvals::ROUTES,
    campaign_schedule::ROUTES,
    campaign_steps::ROUTES,
    campaigns::ROUTES,
    chat_alerts::ROUTES,
    commerce::ROUTES,
    contact_quality::ROUTES,
    contacts::ROUTES,
    content::ROUTES,
    conversions::ROUTES,
    delivery_ops::ROUTES,
    delivery_settings::ROUTES,
    domains::ROUTES,
    drafts::ROUTES,
    emails::ROUTES,
    enrollments::ROUTES,
    events::ROUTES,
    export::ROUTES,
    export_full::ROUTES,
    forms::ROUTES,
    gdpr::ROUTES,
    generate::ROUTES,
    hygiene::ROUTES,
    identify::ROUTES,
    insights::ROUTES,
    language_model::ROUTES,
    notifications::ROUTES,
    platforms::ROUTES,
    platform_imports::ROUTES,
    preview::ROUTES,
    segment_description::ROUTES,
    segments::ROUTES,
    send::ROUTES,
    send_policy::ROUTES,
    sites::ROUTES,
    sms::ROUTES,
    suppressions::ROUTES,
    team::ROUTES,
    templates::ROUTES,
    webhook_deliveries::ROUTES,
    webhook_subscriptions::ROUTES,
    advisor::ROUTES,
    social::ROUTES,
];

/// The gated routes under `/api/integrations` (connecting social accounts), held to their tool
/// groups like the `/api/v1` ones.
pub const INTEGRATION_ROUTES: &[&[Route]] = &[social::INTEGRATION_ROUTES];

/// Registers the gated routes under `/api/integrations`.
pub fn configure_integrations(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("")
            .wrap(from_fn(groups::enforce))
            .configure(|cfg| http_kit::routes::mount(cfg, "/api/integrations", INTEGRATION_ROUTES)),
    );
}

/// The routes without credential outside `/api/v1`: tracking links, provider webhooks and the
/// signup forms' pages.
pub const PUBLIC_ROUTES: &[&[Route]] = &[
    tracking::ROUTES,
    webhooks::ROUTES,
    form_pages::ROUTES,
    social::PUBLIC_ROUTES,
    sms_webhooks::ROUTES,
    commerce_webhooks::ROUTES,
];
