//! The OpenAPI 3.1 document of mail-api, generated from the handlers, and the route that
//! serves it (`/api/v1/openapi.json`; no credential).

use std::sync::OnceLock;

use actix_web::{HttpResponse, web};
use http_kit::Flavor;
use http_kit::openapi::Finish;
use utoipa::{Modify, OpenApi};

use crate::domain::error_code::MailErrorCode;
use crate::http as routes;

const FINISH: Finish = Finish {
    flavor: Flavor::Mail,
    public: &[
        "/api/v1/openapi.json",
        "/api/integrations/social/{platform}/callback",
    ],
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Email Operations Service API",
        version = "1.0.0",
        description = "The email operations control plane.\n\n\
            Every `/api/v1` route needs `Authorization: Bearer mail_…`, a project key with \
            scope read, write or admin (admin ⊃ write ⊃ read). Errors use the envelope \
            `{\"error\",\"code\",\"details\"}`. Rate limits are per project and route class \
            (send, read, write) over a sliding 5 minutes. Bodies over 1 MiB answer 400 \
            `PAYLOAD_TOO_LARGE`; a wrong method answers 405 `METHOD_NOT_ALLOWED` with `Allow`. \
            A NUL character (`\\u0000`) in any JSON string, key or value, or a `%00` in a query \
            parameter or path segment answers 400 `VALIDATION_ERROR` with `details.field` \
            naming it (`properties.nickname`, `data.items[2].name`). This document, `/healthz`, `/readyz` and `/metrics` need no credential.\n\n\
            A key limited to MCP tool groups reaches only its groups' routes (each route \
            belongs to the group of the tools that mirror it): any other answers 403 \
            `TOOL_GROUP_FORBIDDEN`.\n\n\
            `/mcp` (remote MCP) also takes an OAuth access token (`mailo_…`) from the `oauth` \
            endpoints, valid only on the resource its grant names (`/mcp`, or `/api/v1`, where \
            it acts like a key); the person-facing pages of that flow (`GET /oauth/authorize` and its \
            sign-in and consent forms) are HTML, not JSON APIs, and are left out of this \
            document.\n\n\
            Plans limit contacts per project (Free 1,000; BYOD 25,000; Managed 100,000; Agency \
            Plus 500,000; Enterprise unlimited): a write that would create a contact past the \
            limit answers 422 `PLAN_LIMIT`. Emails are stored trimmed and lowercased. Another \
            project's site or resource answers 404. Create routes take an `Idempotency-Key` \
            header: the same key and body within 24 hours replays the first answer \
            (`Idempotent-Replayed: true`); the same key with another body answers 409 \
            `IDEMPOTENCY_KEY_REUSED`."
    ),
    paths(
        crate::oauth::docs::server_metadata,
        crate::oauth::docs::resource_metadata,
        crate::oauth::docs::mcp_resource_metadata,
        crate::oauth::docs::token,
        crate::oauth::docs::register,
        crate::oauth::docs::revoke,
        openapi_json,
        http_kit::health::healthz,
        http_kit::health::readyz,
        http_kit::health::health_details,
        telemetry::metrics::serve,
    ),
    tags(
        (name = "sites", description = "Sender identities"),
        (name = "domains", description = "Own sending domains: the DNS records to publish (SPF, DKIM, DMARC, return path), their checks, and DKIM-signed mail from a verified domain"),
        (name = "contacts", description = "Contacts, identified by email within a project"),
        (name = "events", description = "Named events and the triggered enrollments they cause"),
        (name = "conversions", description = "Conversions and their attribution to email"),
        (name = "campaigns", description = "Drip and triggered campaigns: their steps, statuses, enrollments, calendar and schedule"),
        (name = "approvals", description = "People stay in charge of what agents do: the project's policy of which actions of which credentials wait for a person, and the actions waiting (approved once, with the arguments approved; rejected with a reason; expired)"),
        (name = "ab-tests", description = "A/B tests of a campaign's first step: variants of its subject, HTML and from name sent to a share of the audience, each variant's rate with its Wilson interval and Pearson's chi-squared test, and the winner sent to the rest, once"),
        (name = "drafts", description = "Emails written for a site (by an agent, typically) that wait for a person's approval; an approved draft becomes a campaign's step, once"),
        (name = "segments", description = "Named rules over a project's contacts (tags, properties, events, sites, engagement), evaluated when used; written by hand or by the language model from a description"),
        (name = "templates", description = "Email templates"),
        (name = "suppressions", description = "Addresses never sent to"),
        (name = "sms", description = "Texts through a provider per project (Twilio): numbers in E.164, consent per contact (STOP, START and HELP texted back are honoured and answered), transactional texts and campaigns sent once each through the outbox and the worker, quiet hours in the contact's time zone, segments and prices, and Twilio's signed callbacks"),
        (name = "content", description = "Content blocks (reusable HTML that templates include as `{{ blocks.<name> }}`), the RSS and Atom feeds sites follow, and the pipeline that drafts a digest of their new items for approval"),
        (name = "forms", description = "Signup forms: a hosted page (no API key) and an embeddable snippet per form, double opt-in through a signed, expiring confirmation link, bots refused by a honeypot, a minimum fill time and per-address and per-IP limits, and each form's numbers"),
        (name = "imports", description = "Switching in: accounts of other email platforms (Mailchimp, Brevo, Kit, MailerLite) connected with their API keys, checked when connected and stored sealed, and the migrations run from them as queue jobs; commerce platforms (Stripe, Shopify) whose signed webhooks become contact events, tags, enrollments and conversions through the project's platform triggers"),
        (name = "social", description = "Social publishing: posts published once on each platform by a queue job (rate limits, retries after `Retry-After`, tokens refreshed), social campaigns with tracked links, and connected accounts (OAuth with PKCE, or a platform's own credentials), their tokens sealed and never answered"),
        (name = "automations", description = "Automations: flows a contact moves through, entered by an event, a tag, a segment, an annual date or a form signup, with waits (a duration or a local time of day), branches (segment rules, or whether the previous email was opened or clicked), emails, tag and property changes, signed webhooks and exits; run by the scheduler on every replica, each step once per contact"),
        (name = "hygiene", description = "List hygiene: what a run suppresses or unsubscribes, and its audit"),
        (name = "send", description = "Transactional email"),
        (name = "emails", description = "The email log and each email's history"),
        (name = "delivery", description = "The project's provider and webhook secret (stored sealed)"),
        (name = "tracking", description = "Open pixel, click redirect and unsubscribe (signed links, no API key)"),
        (name = "webhooks", description = "Provider events in (Standard Webhooks signature, no API key); the project's outbound webhooks: subscriptions (sealed `whsec_` secrets, shown once), deliveries signed with `X-Mail-Signature` and the Standard Webhooks headers, dead letters and replays; chat alerts on bounces and complaints"),
        (name = "analytics", description = "Delivery, growth, campaign and conversion figures"),
        (name = "advisor", description = "Advice read from the project's own figures (send time, campaign and portfolio findings, a delivery diagnosis and recovery plan), each with the data and thresholds behind it; the model-backed suggestions answer 422 `LLM_NOT_CONFIGURED` without a language model"),
        (name = "export", description = "The tenant export (admin scope)"),
        (name = "ops", description = "Delivery operations: the project's dead-lettered sends and the periodic jobs' runs"),
        (name = "account", description = "The key's project, its plan, its API keys, its team and its notifications (key and team management: admin scope)"),
        (name = "gdpr", description = "Erasing a contact's personal data, and the log of erasures"),
        (name = "oauth", description = "The OAuth 2.0 authorization server of remote MCP clients (no API key): metadata (RFC 8414, RFC 9728), token, dynamic registration (RFC 7591) and revocation (RFC 7009). Errors use the RFCs' `{error, error_description}`, not the envelope. The person-facing HTML pages (`GET /oauth/authorize`, the sign-in and consent forms it shows) are not JSON APIs and are not in this document."),
        (name = "contract", description = "This document"),
        (name = "operations", description = "Health and metrics"),
    )
)]
struct ApiDoc;

/// The document: the routes without a module table, then every module's table
/// ([`routes::ROUTES`], [`routes::PUBLIC_ROUTES`]), finished for the mail envelope.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut document = routes_document();
    FINISH.modify(&mut document);
    list_error_codes(&mut document);
    document
}

/// The routes as their modules document them, before the envelope, headers and error codes
/// are added.
fn routes_document() -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
    http_kit::routes::document(&mut document, routes::ROUTES);
    http_kit::routes::document(&mut document, routes::PUBLIC_ROUTES);
    http_kit::routes::document(&mut document, routes::INTEGRATION_ROUTES);
    document
}

/// States the envelope's `code` as the closed list of [`MailErrorCode`] (every answer has one).
fn list_error_codes(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::Schema;
    use utoipa::openapi::{Ref, RefOr};
    use utoipa::{PartialSchema, ToSchema};

    let components = document.components.get_or_insert_with(Default::default);
    components
        .schemas
        .insert(MailErrorCode::name().into_owned(), MailErrorCode::schema());
    if let Some(RefOr::T(Schema::Object(envelope))) = components.schemas.get_mut("MailError") {
        envelope.properties.insert(
            "code".to_owned(),
            RefOr::Ref(Ref::from_schema_name(MailErrorCode::name())),
        );
        if !envelope.required.iter().any(|name| name == "code") {
            envelope.required.push("code".to_owned());
        }
    }
}

/// The document as committed under `proto-docs/` (pretty JSON, trailing newline).
pub fn json() -> String {
    http_kit::openapi::to_json(&document())
}

pub fn yaml() -> String {
    http_kit::openapi::to_yaml(&document())
}

/// The query parameters each operation documents: the rest are refused by name
/// ([`http_kit::Query`]).
fn query_parameters() -> web::Data<http_kit::QueryParameters> {
    static INDEX: OnceLock<web::Data<http_kit::QueryParameters>> = OnceLock::new();
    INDEX
        .get_or_init(|| {
            // The route tables' operations are read when their routes are first called.
            let mut index = http_kit::QueryParameters::from_openapi(&ApiDoc::openapi());
            index.add_routes(routes::ROUTES);
            index.add_routes(routes::PUBLIC_ROUTES);
            index.add_routes(routes::INTEGRATION_ROUTES);
            web::Data::new(index)
        })
        .clone()
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(query_parameters());
    cfg.service(web::resource("/api/v1/openapi.json").route(web::get().to(openapi_json)));
}

/// This document, as JSON.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "contract",
    responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn openapi_json() -> HttpResponse {
    static JSON: OnceLock<String> = OnceLock::new();
    HttpResponse::Ok()
        .content_type("application/json")
        .body(JSON.get_or_init(json).as_str())
}
