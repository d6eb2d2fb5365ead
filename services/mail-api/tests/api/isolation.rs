//! Cross-tenant isolation, driven by the committed OpenAPI document.
//!
//! Three projects (A and B in one account, C in another) each seed one of every resource, with
//! a marker of their own in every text field, and plant the same client-chosen names (contact
//! and suppression emails, an order id, an event name; a site slug is deployment-wide, so each
//! project's starts alike and ends with its label). Then every GET, PUT,
//! PATCH and DELETE operation of `proto-docs/mail-api.openapi.json` is called by each project
//! with every other project's ids: the answer is 404, or names none of the other project's
//! markers nor ids that are not also the caller's. A parameter this file cannot fill fails the
//! suite, so a new route is covered (or mapped) the day it lands.

use std::collections::BTreeSet;

use auth::Scope;
use mail_api::db::{credentials, tenants};
use rate_limit::policy::Plan;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use test_support::document::{self, Operation, Param, Phase, probed};
use test_support::ids::{collect_ids, id_of};
use test_support::{excerpt, with_query};

use crate::common::*;
use crate::send::Send;

/// Routes served without an API key, so there is no caller's project to isolate: the OpenAPI
/// document (a reference), the probes (`/healthz`, `/readyz`, `/healthz/details`, `/metrics`, no tenant data), the
/// tracking links (the signed token is the authority, and names its email) and the provider
/// webhooks (authenticated by the provider's signature), and the OAuth metadata documents (the
/// same for everyone). The suite checks that the document declares them without a credential,
/// so this list cannot hide a tenant route.
const PUBLIC: &[&str] = &[
    "/api/v1/openapi.json",
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/healthz",
    "/readyz",
    "/healthz/details",
    "/metrics",
    "/t/o/{token}",
    "/t/c/{token}",
    "/t/u/{token}",
    "/api/webhooks/{provider}",
    "/api/webhooks/{provider}/{project_id}",
    // Signup forms' hosted pages and confirmation links: a form is public by its id, a
    // signup's link is signed.
    "/f/{id}",
    "/f/confirm/{token}",
    // A social platform's callback: the single-use state it carries names the project.
    "/api/integrations/social/{platform}/callback",
    // Twilio's callbacks (signed with the project's auth token).
    "/api/webhooks/sms/twilio/{project_id}/inbound",
    "/api/webhooks/sms/twilio/{project_id}/status",
    // Commerce platforms' webhooks (signed with the source's sealed secret).
    "/api/webhooks/stripe/{source_id}",
    "/api/webhooks/shopify/{source_id}",
];

/// A word in every project's planted texts, for search parameters.
const SHARED_WORD: &str = "isolation";

/// The delay of the seeded campaign's second step.
const CALENDAR_DELAY_MINUTES: i64 = 30;

#[tokio::test]
async fn projects_see_nothing_of_each_other() {
    let s = Send::new().await;
    let h = &s.h;
    let planted = Planted::new();
    let mut conn = h.conn().await;
    let first = tenants::create_account(&mut conn, "first").await.unwrap();
    let second = tenants::create_account(&mut conn, "second").await.unwrap();
    let mut owners = Vec::new();
    for (label, account) in [("a", first.id), ("b", first.id), ("c", second.id)] {
        let project = tenants::create_project(&mut conn, account, label, Plan::Managed)
            .await
            .unwrap()
            .id;
        let (_, key) = key(&mut conn, project, Scope::Admin).await;
        owners.push(seed(h, label, project, key, &planted).await);
    }
    let operations = operations();
    let mut violations = Vec::new();
    let mut calls = 0;
    for phase in [Phase::Read, Phase::Write, Phase::Delete] {
        for caller in &owners {
            for victim in owners.iter().filter(|o| o.label != caller.label) {
                for op in operations.iter().filter(|op| op.phase() == phase) {
                    for probe in probes(op, victim, &planted) {
                        check(h, op, &probe, caller, victim, &mut violations).await;
                        calls += 1;
                    }
                }
            }
        }
    }
    // Six directions, each calling every operation at least once.
    assert!(calls >= 6 * operations.len(), "{calls} calls");
    for owner in &owners {
        violations.extend(still_intact(h, owner).await);
    }
    assert!(
        violations.is_empty(),
        "{} isolation violation(s):\n{}",
        violations.len(),
        violations.join("\n")
    );
    s.finish().await;
}

/// Values planted identically under every project.
struct Planted {
    slug: String,
    contact: String,
    suppression: String,
    order: String,
    event: String,
}

impl Planted {
    fn new() -> Self {
        let n = Uuid::new_v4().simple().to_string();
        Self {
            slug: format!("shared{}", &n[..8]),
            contact: format!("shared-{n}@example.com"),
            suppression: format!("shared-suppressed-{n}@example.com"),
            order: format!("order-{n}"),
            event: format!("signup-{n}"),
        }
    }
}

/// One project and what it seeded.
struct Owner {
    label: &'static str,
    project: Uuid,
    key: String,
    marker: String,
    /// Every id the project's seeding answers named, and the project's id.
    ids: BTreeSet<String>,
    site: String,
    campaign: String,
    email: String,
    /// A contact email of its own (it carries the marker).
    contact: String,
    /// A suppressed address of its own (it carries the marker).
    suppression: String,
    /// An API key of its own (named by the marker).
    api_key: String,
    template: String,
    /// A segment of its own (named by the marker, matching its planted contact).
    segment: String,
    /// The id of its contact of the planted email (the one with events, emails, conversions).
    contact_id: String,
    /// The first step of its campaign (the planted contact is enrolled in the campaign).
    step: String,
    /// An outbound-webhook subscription of its own (its URL and description carry the marker).
    webhook: String,
    /// A dead-lettered delivery of an event of its own to that subscription.
    delivery: String,
    /// Its site's own sending domain (`<marker>.example`).
    domain: String,
    /// A pending draft of its own (its subject and HTML carry the marker).
    draft: String,
    /// A pending approval of its own (its summary carries the marker).
    approval: String,
    /// A running A/B test of its own, on a draft campaign (its name carries the marker).
    ab_test: String,
    /// A signup form of its own (its name and consent text carry the marker).
    form: String,
    /// A connected email platform account of its own (its account name carries the marker).
    platform_connection: String,
    /// A migration run of its own (its error carries the marker; published, so no worker
    /// takes it).
    platform_import: String,
    /// A commerce source and a platform trigger of its own (the trigger's event type, and its
    /// logged platform event's type and id, carry the marker).
    commerce_source: String,
    platform_trigger: String,
    /// A social post and a social campaign of its own (their texts carry the marker).
    social_post: String,
    social_campaign: String,
    /// A content block of its own (its HTML carries the marker).
    block: String,
    /// A content source of its own (its URL carries the marker).
    source: String,
    /// An automation of its own (its name, event and tag carry the marker).
    automation: String,
}

async fn seed(h: &Harness, label: &'static str, project: Uuid, key: String, p: &Planted) -> Owner {
    let marker = format!("secret-{label}-{}", Uuid::new_v4().simple());
    let mut ids = BTreeSet::from([project.to_string()]);
    let mut call = async |method: Method, path: &str, body: Option<Value>| -> Value {
        let (status, answer) = send(h, &key, method, path, body).await;
        assert!(
            (200..300).contains(&status),
            "{label} {path}: {status} {answer}"
        );
        collect_ids(&answer, &mut ids);
        answer
    };
    let provider = json!({"kind": "resend", "api_key": "re_test_key"});
    call(Method::PUT, "/api/v1/delivery/provider", Some(provider)).await;
    call(Method::POST, "/api/v1/delivery/webhook-secret", None).await;
    let slug = format!("{}{}", p.slug, label.to_lowercase());
    let site =
        json!({"name": format!("{SHARED_WORD} site {marker}"), "slug": slug, "from_name": marker});
    let site = id_of(&call(Method::POST, "/api/v1/sites", Some(site)).await, "id");

    let contact = format!("{marker}@example.com");
    let planted_contact = json!({"email": p.contact, "first_name": format!("{SHARED_WORD} {marker}"),
        "last_name": marker, "site_id": site, "tags": [marker], "properties": {"note": marker},
        "utm_source": marker, "referrer": format!("https://example.com/{marker}")});
    let contact_id = id_of(
        &call(Method::POST, "/api/v1/contacts", Some(planted_contact)).await,
        "contact_id",
    );
    let identified = json!({"email": contact, "first_name": format!("{SHARED_WORD} {marker}"),
        "properties": {"note": marker}, "tags": [marker], "site_id": site});
    call(Method::POST, "/api/v1/identify", Some(identified)).await;

    // Its second step is due half an hour after the first: the enrollment stays in progress,
    // in the calendar and the site's schedule.
    let steps = [
        json!({"subject": format!("{SHARED_WORD} step {marker}"), "html": format!("<p>{marker}</p>")}),
        json!({"subject": format!("later {marker}"), "html": format!("<p>{marker}</p>"),
               "delay_minutes": CALENDAR_DELAY_MINUTES}),
    ];
    let campaign = json!({"name": format!("{SHARED_WORD} campaign {marker}"), "site_id": site,
        "type": "triggered", "trigger_event_name": p.event, "steps": steps});
    let campaign = call(Method::POST, "/api/v1/campaigns", Some(campaign)).await;
    let step = id_of(&campaign["steps"][0], "id");
    let campaign = id_of(&campaign, "id");
    let status = json!({"status": "active"});
    call(
        Method::POST,
        &format!("/api/v1/campaigns/{campaign}/status"),
        Some(status),
    )
    .await;
    for (path, body) in [
        (
            "send-policy",
            json!({"timezone": "Europe/Berlin", "blackout_dates": ["2000-01-01"]}),
        ),
        (
            "warmup",
            json!({"daily_limits": [100000], "provider_daily_cap": 1000000}),
        ),
    ] {
        call(
            Method::PUT,
            &format!("/api/v1/sites/{site}/{path}"),
            Some(body),
        )
        .await;
    }
    let event = json!({"email": p.contact, "event": p.event, "data": {"note": marker}});
    call(Method::POST, "/api/v1/events", Some(event)).await;
    let template = json!({"name": format!("{SHARED_WORD} template {marker}"), "brief": marker,
        "subject_hint": marker, "tags": [marker]});
    let template = id_of(
        &call(Method::POST, "/api/v1/templates", Some(template)).await,
        "id",
    );
    // The same rules under every project (planted email, event and tag values), and its own.
    let segment = json!({"name": format!("{SHARED_WORD} segment {marker}"), "description": marker,
        "rules": {"any": [
            {"field": "email", "op": "eq", "value": p.contact},
            {"field": "event", "op": "eq", "value": p.event},
            {"all": [{"field": "tag", "op": "eq", "value": marker},
                     {"field": "site_id", "op": "eq", "value": site}]}]}});
    let segment = id_of(
        &call(Method::POST, "/api/v1/segments", Some(segment)).await,
        "id",
    );
    let voice = json!({"tone": marker, "audience": marker, "guidelines": marker,
        "words_to_avoid": [marker]});
    call(
        Method::PUT,
        &format!("/api/v1/sites/{site}/brand-voice"),
        Some(voice),
    )
    .await;
    let domain = json!({"site_id": site, "domain": format!("{marker}.example")});
    let domain = id_of(
        &call(Method::POST, "/api/v1/domains", Some(domain)).await,
        "id",
    );
    let draft = json!({"site_id": site, "subject": format!("{SHARED_WORD} draft {marker}"),
        "body_html": format!("<p>{marker}</p>")});
    let draft = id_of(
        &call(Method::POST, "/api/v1/drafts", Some(draft)).await,
        "id",
    );
    let tested = json!({"name": format!("{SHARED_WORD} tested {marker}"), "site_id": site,
        "steps": [{"subject": format!("tested {marker}"), "html": format!("<p>{marker}</p>")}]});
    let tested = id_of(
        &call(Method::POST, "/api/v1/campaigns", Some(tested)).await,
        "id",
    );
    let ab_test = json!({"campaign_id": tested, "name": format!("{SHARED_WORD} test {marker}"),
        "variants": [{"subject": format!("A {marker}")}, {"subject": format!("B {marker}")}]});
    let ab_test = id_of(
        &call(Method::POST, "/api/v1/ab-tests", Some(ab_test)).await,
        "id",
    );
    let form = json!({"site_id": site, "name": format!("{SHARED_WORD} form {marker}"),
        "consent_text": marker, "tags": [marker],
        "fields": [{"name": "first_name", "label": marker}]});
    let form = id_of(&call(Method::POST, "/api/v1/forms", Some(form)).await, "id");
    let social_post = json!({"title": format!("{SHARED_WORD} post {marker}"), "content": marker,
        "platforms": ["mastodon", "x"]});
    let social_post = id_of(
        &call(Method::POST, "/api/v1/social/posts", Some(social_post)).await,
        "id",
    );
    let social_campaign = json!({"name": format!("{SHARED_WORD} {marker}"), "platform": "x",
        "destination_url": format!("https://example.com/{marker}")});
    let social_campaign = id_of(
        &call(
            Method::POST,
            "/api/v1/social/campaigns",
            Some(social_campaign),
        )
        .await,
        "id",
    );
    let block = json!({"name": "footer", "html": format!("<p>{SHARED_WORD} {marker}</p>")});
    let block = id_of(
        &call(Method::POST, "/api/v1/content/blocks", Some(block)).await,
        "id",
    );
    // A public name that does not resolve: stored, its reads fail.
    let source = json!({"site_id": site, "url": format!("https://feeds.invalid/{marker}.xml")});
    let source = id_of(
        &call(Method::POST, "/api/v1/content/sources", Some(source)).await,
        "id",
    );
    let automation = json!({"site_id": site, "name": format!("{SHARED_WORD} automation {marker}"),
        "trigger": {"type": "event", "event": marker}, "steps": [{"type": "add_tag", "tag": marker}]});
    let automation = id_of(
        &call(Method::POST, "/api/v1/automations", Some(automation)).await,
        "id",
    );
    let member = json!({"email": format!("team-{marker}@example.com"), "role": "viewer"});
    call(Method::POST, "/api/v1/team", Some(member)).await;

    let suppression = format!("suppressed-{marker}@example.com");
    for email in [&p.suppression, &suppression] {
        let body = json!({"email": email, "note": marker});
        call(Method::POST, "/api/v1/suppressions", Some(body)).await;
    }
    let message = json!({"to": p.contact, "site_id": site, "subject": format!("{SHARED_WORD} {marker}"),
        "html": format!("<p>{marker} <a href=\"https://example.com/{marker}\">go</a></p>"),
        "text": marker, "tags": [marker], "headers": {"X-Marker": marker}});
    let sent = call(Method::POST, "/api/v1/send", Some(message)).await;
    assert_eq!(sent["status"], "sent", "{label}: {sent}");
    let email = id_of(&sent, "id");
    let conversion = json!({"email": p.contact, "event": "purchase", "revenue": 12.5,
        "currency": "EUR", "order_id": p.order, "metadata": {"note": marker}});
    call(Method::POST, "/api/v1/conversion", Some(conversion)).await;
    // A role address that list hygiene suppresses: an audit entry naming the marker.
    let role = json!({"email": format!("info+{marker}@example.com"), "site_id": site});
    call(Method::POST, "/api/v1/identify", Some(role)).await;
    let hygiene = json!({"suppress_role_addresses": true});
    call(Method::PUT, "/api/v1/hygiene/config", Some(hygiene)).await;
    let run = call(
        Method::POST,
        "/api/v1/hygiene/run",
        Some(json!({"site_id": site})),
    )
    .await;
    assert_eq!(run["suppressions_added"], 1, "{label}: {run}");
    let api_key = json!({"name": marker, "scope": "read", "tool_groups": ["contacts"]});
    let api_key = id_of(
        &call(Method::POST, "/api/v1/api-keys", Some(api_key)).await,
        "id",
    );
    // An outbound-webhook subscription, and a dead letter of an event of the project's.
    let webhook = json!({"url": format!("https://hooks.example.com/{marker}"),
        "events": ["campaign.completed"], "description": marker});
    let webhook = id_of(
        &call(Method::POST, "/api/v1/webhook-subscriptions", Some(webhook)).await,
        "id",
    );
    let chat = json!({"url": format!("https://chat.example.com/{marker}")});
    call(Method::PUT, "/api/v1/chat-alerts", Some(chat)).await;
    // Its own model endpoint (a name that does not resolve: stored, never called).
    let model = json!({"base_url": "https://llm.invalid/v1", "model": marker, "api_key": marker});
    call(Method::PUT, "/api/v1/language-model", Some(model)).await;
    // SMS: its contact's number and consent (a text to it and one received below).
    let number = format!("+1415830{:04}", u16::from(label.as_bytes()[0]));
    call(
        Method::PUT,
        &format!("/api/v1/sms/contacts/{contact_id}/consent"),
        Some(json!({"status": "granted", "phone": number, "timezone": "Europe/Paris"})),
    )
    .await;
    h.exec(&format!(
        "INSERT INTO outbound_events (id, project_id, type, data) \
         VALUES (uuid_v7(), '{project}', 'campaign.completed', jsonb_build_object('note', '{marker}'))"
    ))
    .await;
    h.exec(&format!(
        "UPDATE webhook_deliveries SET status = 'dead', attempts = 5, last_error = '{marker}', \
           published_at = now() WHERE project_id = '{project}'"
    ))
    .await;
    let delivery = h
        .query(&format!(
            "SELECT id::text FROM webhook_deliveries WHERE project_id = '{project}'"
        ))
        .await
        .remove(0);
    ids.insert(delivery.clone());
    // A send the worker gave up on (`/ops/dlq`) and a periodic job's run that counted
    // something for the project (`/ops/cron-runs`), both named by the marker.
    let failed = Uuid::now_v7();
    ids.insert(failed.to_string());
    h.exec(&format!(
        "INSERT INTO email_log (id, project_id, site_id, to_email, subject, status, last_error) \
         VALUES ('{failed}', '{project}', '{site}', '{contact}', '{SHARED_WORD} {marker}', \
                 'failed', '{marker}')"
    ))
    .await;
    let run = Uuid::now_v7();
    h.exec(&format!(
        "INSERT INTO cron_runs (id, job, started_at, finished_at, outcome, total) \
         VALUES ('{run}', 'outbox_relay', now(), now(), 'ok', 1)"
    ))
    .await;
    h.exec(&format!(
        "INSERT INTO cron_run_counts (run_id, project_id, what, count) \
         VALUES ('{run}', '{project}', '{marker}', 1)"
    ))
    .await;
    // Connected without calling the platform: its account name carries the marker.
    let platform_connection = Uuid::now_v7();
    ids.insert(platform_connection.to_string());
    h.exec(&format!(
        "INSERT INTO platform_connections (id, project_id, platform, account, \
           credentials_sealed, created_at) \
         VALUES ('{platform_connection}', '{project}', 'mailchimp', '{marker}', '\\x00', now())"
    ))
    .await;
    let platform_import = Uuid::now_v7();
    ids.insert(platform_import.to_string());
    h.exec(&format!(
        "INSERT INTO platform_imports (id, project_id, connection_id, site_id, platform, kind, \
           status, error, published_at, created_at) \
         VALUES ('{platform_import}', '{project}', '{platform_connection}', '{site}', \
           'mailchimp', 'full', 'failed', '{marker}', now(), now())"
    ))
    .await;
    let commerce_source = Uuid::now_v7();
    ids.insert(commerce_source.to_string());
    h.exec(&format!(
        "INSERT INTO commerce_sources (id, project_id, platform, site_id, \
           signing_secret_sealed, created_at) \
         VALUES ('{commerce_source}', '{project}', 'stripe', '{site}', '\\x00', now())"
    ))
    .await;
    let platform_trigger = Uuid::now_v7();
    ids.insert(platform_trigger.to_string());
    h.exec(&format!(
        "INSERT INTO platform_triggers (id, project_id, platform, event_type, action, \
           campaign_id, created_at) \
         VALUES ('{platform_trigger}', '{project}', 'stripe', '{marker}', 'enroll', \
           '{campaign}', now())"
    ))
    .await;
    let platform_event = Uuid::now_v7();
    ids.insert(platform_event.to_string());
    h.exec(&format!(
        "INSERT INTO platform_events (id, project_id, source_id, platform, event_type, \
           event_id, contact_id, outcome, received_at) \
         VALUES ('{platform_event}', '{project}', '{commerce_source}', 'stripe', '{marker}', \
           'evt_{marker}', '{contact_id}', 'applied', now())"
    ))
    .await;
    let approval = Uuid::now_v7();
    ids.insert(approval.to_string());
    h.exec(&format!(
        "INSERT INTO approvals (id, project_id, action, arguments, arguments_hash, summary, \
           requested_by, requester, expires_at) \
         VALUES ('{approval}', '{project}', 'activate_campaign', \
           jsonb_build_object('campaign_id', '{campaign}'), '\\x00', '{marker}', \
           '{project}', 'agent_key', now() + interval '1 day')"
    ))
    .await;
    // SMS: its contact's number and consent, a text to it and a text received (their bodies
    // carry the marker).
    h.exec(&format!(
        "INSERT INTO sms_messages (id, project_id, contact_id, to_phone, body, status, \
         send_after, published_at, created_at, updated_at) VALUES ('{}', '{project}', \
         '{contact_id}', '{number}', 'text {marker}', 'sent', now(), now(), now(), now())",
        Uuid::now_v7()
    ))
    .await;
    h.exec(&format!(
        "INSERT INTO sms_inbound (id, project_id, message_sid, from_phone, to_phone, body, \
         received_at) VALUES ('{}', '{project}', 'SM{marker}', '{number}', '+14158675309', \
         'reply {marker}', now())",
        Uuid::now_v7()
    ))
    .await;
    Owner {
        form,
        platform_connection: platform_connection.to_string(),
        platform_import: platform_import.to_string(),
        commerce_source: commerce_source.to_string(),
        platform_trigger: platform_trigger.to_string(),
        social_post,
        social_campaign,
        block,
        source,
        automation,
        approval: approval.to_string(),
        ab_test,
        draft,
        webhook,
        delivery,
        domain,
        api_key,
        template,
        segment,
        contact_id,
        step,
        label,
        project,
        key,
        marker,
        ids,
        site,
        campaign,
        email,
        contact,
        suppression,
    }
}

async fn send(
    h: &Harness,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    test_support::call(&h.http, h.server.url(path), key, method, body).await
}

/// The operations the suite calls, from the committed document.
fn operations() -> Vec<Operation> {
    probed(
        &document::load(env!("CARGO_MANIFEST_DIR"), "mail-api.openapi.json"),
        PUBLIC,
    )
}

/// One call of an operation.
struct Probe {
    path: String,
    query: Vec<(String, String)>,
    body: Option<Value>,
    /// The path names the victim's own resource (not a value planted under every project).
    foreign_path_id: bool,
}

/// The victim's value for a path parameter, and the value planted under every project if any.
/// Panics for a parameter it does not know: map a new route here.
fn path_value(path: &str, name: &str, victim: &Owner, p: &Planted) -> (String, Option<String>) {
    match (path, name) {
        ("/api/v1/emails/{id}" | "/api/v1/emails/{id}/events", "id") => {
            (victim.email.clone(), None)
        }
        ("/api/v1/api-keys/{id}", "id") => (victim.api_key.clone(), None),
        (
            "/api/v1/sites/{id}" | "/api/v1/sites/{id}/brand-voice" | "/api/v1/sites/{id}/insights",
            "id",
        ) => (victim.site.clone(), None),
        ("/api/v1/templates/{id}" | "/api/v1/templates/{id}/translate", "id") => {
            (victim.template.clone(), None)
        }
        ("/api/v1/domains/{id}" | "/api/v1/domains/{id}/refresh", "id") => {
            (victim.domain.clone(), None)
        }
        ("/api/v1/segments/{id}" | "/api/v1/segments/{id}/contacts", "id") => {
            (victim.segment.clone(), None)
        }
        ("/api/v1/contacts/{id}/personal-data", "id") => (victim.contact_id.clone(), None),
        (
            "/api/v1/contacts/{id}"
            | "/api/v1/contacts/{id}/export"
            | "/api/v1/contacts/{id}/timeline"
            | "/api/v1/contacts/{id}/score",
            "id",
        ) => (victim.contact_id.clone(), Some(p.contact.clone())),
        ("/api/v1/suppressions/{email}", "email") => {
            (victim.suppression.clone(), Some(p.suppression.clone()))
        }
        (path, "id") if path.starts_with("/api/v1/campaigns/{id}") => {
            (victim.campaign.clone(), None)
        }
        ("/api/v1/campaigns/{id}/enrollments/{contact_id}", "contact_id") => {
            (victim.contact_id.clone(), None)
        }
        ("/api/v1/campaign-steps/{id}", "id") => (victim.step.clone(), None),
        (path, "id") if path.starts_with("/api/v1/drafts/{id}") => (victim.draft.clone(), None),
        (path, "id") if path.starts_with("/api/v1/ab-tests/{id}") => (victim.ab_test.clone(), None),
        (path, "id") if path.starts_with("/api/v1/approvals/{id}") => {
            (victim.approval.clone(), None)
        }
        ("/api/v1/webhook-subscriptions/{id}", "id") => (victim.webhook.clone(), None),
        ("/api/v1/forms/{id}" | "/api/v1/forms/{id}/stats", "id") => (victim.form.clone(), None),
        (
            "/api/v1/platforms/connections/{id}" | "/api/v1/platforms/connections/{id}/migrations",
            "id",
        ) => (victim.platform_connection.clone(), None),
        ("/api/v1/platforms/imports/{id}", "id") => (victim.platform_import.clone(), None),
        ("/api/v1/platforms/commerce/{id}", "id") => (victim.commerce_source.clone(), None),
        ("/api/v1/platforms/triggers/{id}", "id") => (victim.platform_trigger.clone(), None),
        ("/api/v1/sms/contacts/{id}/consent", "id") => (victim.contact_id.clone(), None),
        ("/api/v1/content/blocks/{id}", "id") => (victim.block.clone(), None),
        ("/api/v1/content/sources/{id}", "id") => (victim.source.clone(), None),
        (path, "id") if path.starts_with("/api/v1/automations/{id}") => {
            (victim.automation.clone(), None)
        }
        ("/api/v1/webhook-deliveries/{id}/replay", "id") => (victim.delivery.clone(), None),
        ("/api/v1/social/posts/{id}", "id") => (victim.social_post.clone(), None),
        ("/api/v1/social/campaigns/{id}/posts", "id") => (victim.social_campaign.clone(), None),
        // Platforms are the same for every project; Mastodon's connection (no OAuth client in
        // this deployment) reaches no platform.
        (
            "/api/v1/social/accounts/{platform}" | "/api/integrations/social/{platform}/connect",
            "platform",
        ) => ("mastodon".to_owned(), None),
        (path, "id") if path.starts_with("/api/v1/sites/{id}/") => (victim.site.clone(), None),
        _ => panic!("{path}: no value for path parameter `{name}`; map it in the isolation suite"),
    }
}

/// Values to try for a query parameter, `None` for parameters that select nothing of a
/// project's (paging, statuses, windows). Panics for an unknown required one.
fn query_values(param: &Param, victim: &Owner, p: &Planted) -> Option<Vec<String>> {
    Some(match param.name.as_str() {
        "search" => vec![victim.marker.clone(), SHARED_WORD.to_owned()],
        "site_id" => vec![victim.site.clone()],
        "campaign_id" => vec![victim.campaign.clone()],
        "contact_id" => vec![victim.contact_id.clone()],
        "subscription_id" => vec![victim.webhook.clone()],
        "event" => vec![p.event.clone()],
        "to" => vec![victim.contact.clone(), p.contact.clone()],
        "tag" => vec![victim.marker.clone()],
        // A configured blocklist: the site is the resource.
        "zone" => vec!["dbl.spamhaus.org".to_owned()],
        // The ZIP of `csv` is compressed: only JSON can be searched for markers.
        "format" => vec!["json".to_owned()],
        // The calendar's month: the one the seeded second steps are due in.
        "year" | "month" => {
            let due = chrono::Utc::now() + chrono::TimeDelta::minutes(CALENDAR_DELAY_MINUTES);
            let part = if param.name == "year" {
                chrono::Datelike::year(&due).to_string()
            } else {
                chrono::Datelike::month(&due).to_string()
            };
            vec![part]
        }
        _ if param.required => panic!("no value for required query parameter `{}`", param.name),
        _ => return None,
    })
}

/// A minimal valid body for operations that take one.
fn body_for(op: &Operation) -> Option<Value> {
    if !op.has_body {
        return None;
    }
    Some(match (op.method.as_str(), op.path.as_str()) {
        ("PUT", "/api/v1/delivery/provider") => json!({"kind": "resend", "api_key": "re_test_key"}),
        ("PATCH", "/api/v1/sites/{id}") => json!({"name": "renamed", "from_name": "renamed"}),
        ("PUT", "/api/v1/sites/{id}/brand-voice") => json!({"tone": "overwritten"}),
        ("PATCH", "/api/v1/templates/{id}") => json!({"name": "renamed", "html": "<p>x</p>"}),
        ("POST", "/api/v1/templates/{id}/translate") => json!({"language": "de"}),
        // A public name that does not resolve: stored, never called here.
        ("PUT", "/api/v1/language-model") => {
            json!({"base_url": "https://llm.invalid/v1", "model": "probe", "api_key": "sk-probe"})
        }
        ("PATCH", "/api/v1/segments/{id}") => json!({"name": "renamed", "description": "",
            "rules": {"all": [{"field": "tag", "op": "exists", "value": true}]}}),
        ("PATCH", "/api/v1/contacts/{id}") => json!({"properties": {"probe": true}}),
        ("PUT", "/api/v1/hygiene/config") => json!({"inactive_days": 0}),
        ("PATCH", "/api/v1/campaigns/{id}") => json!({"name": "renamed"}),
        ("POST", "/api/v1/campaigns/{id}/status") => json!({"status": "paused"}),
        ("POST", "/api/v1/campaigns/{id}/clone") => json!({"new_name": "copied"}),
        ("POST", "/api/v1/campaigns/{id}/steps") => json!({"subject": "x", "html": "<p>x</p>"}),
        ("POST", "/api/v1/campaigns/{id}/enrollments") => json!({"contact_id": Uuid::nil()}),
        ("POST", "/api/v1/campaigns/{id}/segment-enrollments") => {
            json!({"site_id": Uuid::nil(), "segment_id": Uuid::nil()})
        }
        ("PATCH", "/api/v1/campaign-steps/{id}") => json!({"subject": "renamed"}),
        ("POST", "/api/v1/drafts/{id}/reject") => json!({"reason": "probe"}),
        ("POST", "/api/v1/drafts/{id}/promote") => json!({}),
        ("POST", "/api/v1/ab-tests/{id}/promote") => json!({}),
        ("POST", "/api/v1/approvals/{id}/reject") => json!({"reason": "probe"}),
        ("PUT", "/api/v1/approval-policy") => json!({"applies_to": "agents",
            "campaign_launch": true, "send_recipients_per_day": null,
            "enroll_segment_size": null, "bulk_delete": true, "expires_after_minutes": 60}),
        ("PUT", "/api/v1/sites/{id}/send-policy") => json!({"timezone": "UTC"}),
        ("PUT", "/api/v1/sites/{id}/warmup") => json!({"daily_limits": [1]}),
        ("POST", "/api/v1/sites/{id}/abuse-monitor/override") => {
            json!({"reason": "probe", "ttl_hours": 1})
        }
        ("PUT", "/api/v1/scoring-rules") => json!({"open_points": 2}),
        ("PUT", "/api/v1/chat-alerts") => json!({"url": "https://chat.example.com/overwritten"}),
        ("PATCH", "/api/v1/webhook-subscriptions/{id}") => {
            json!({"description": "renamed", "enabled": false, "rotate_secret": true})
        }
        // A site of no project (another project's: `domains::registering_…`).
        ("POST", "/api/v1/domains") => json!({"site_id": Uuid::nil(), "domain": "probe.example"}),
        ("POST", "/api/v1/forms") => json!({"site_id": Uuid::nil(), "name": "probe"}),
        ("POST", "/api/v1/social/posts") => {
            json!({"title": "probe", "content": "probe", "platforms": ["x"]})
        }
        ("PATCH", "/api/v1/social/posts/{id}") => json!({"title": "renamed"}),
        ("POST", "/api/v1/social/posts/adapt") => {
            json!({"email_campaign_id": Uuid::nil(), "platforms": ["x"]})
        }
        ("POST", "/api/v1/social/campaigns") => {
            json!({"name": "probe", "platform": "x", "destination_url": "https://example.com/"})
        }
        ("POST", "/api/v1/social/campaigns/{id}/posts") => {
            json!({"content": "probe", "publisher": "probe"})
        }
        ("POST", "/api/v1/social/accounts/{platform}") => json!({}),
        // Not a valid account (400): a valid one would have the provider status call Twilio.
        ("PUT", "/api/v1/sms/provider") => {
            json!({"provider": "twilio", "account_sid": "AC0", "auth_token": "x", "from_number": "+1"})
        }
        ("PUT", "/api/v1/sms/contacts/{id}/consent") => {
            json!({"status": "revoked", "phone": "+14158309999"})
        }
        ("POST", "/api/v1/sms/send") => json!({"contact_id": Uuid::nil(), "body": "probe"}),
        ("POST", "/api/v1/sms/campaigns") => {
            json!({"site_id": Uuid::nil(), "name": "probe", "body": "probe"})
        }
        ("POST", "/api/v1/sms/cost-preview") => json!({"body": "probe"}),
        ("POST", "/api/v1/platforms/connections/{id}/migrations") => {
            json!({"site_id": Uuid::nil()})
        }
        // A site of no project: refused before the token would be checked with the platform.
        ("POST", "/api/v1/platforms/imports/campaigns") => {
            json!({"provider": "mailchimp", "oauth_token": "probe", "site_id": Uuid::nil()})
        }
        // A site of no project: refused before anything is recorded.
        ("POST", "/api/v1/platforms/imports/csv") => json!({"site_id": Uuid::nil(),
            "layout": "generic", "csv": "email\nprobe@example.com\n",
            "mapping": {"email": "email"}}),
        ("POST", "/api/v1/content/blocks") => json!({"name": "footer", "html": "<p>probe</p>"}),
        ("PATCH", "/api/v1/content/blocks/{id}") => json!({"html": "<p>overwritten</p>"}),
        ("POST", "/api/v1/content/sources") => {
            json!({"site_id": Uuid::nil(), "url": "https://feeds.invalid/probe.xml"})
        }
        // The caller's own sources only (another project's ids are in the path probes).
        ("POST", "/api/v1/content/pipeline") => json!({}),
        ("POST", "/api/v1/automations") => json!({"site_id": Uuid::nil(), "name": "probe",
            "trigger": {"type": "event", "event": "probe"}, "steps": [{"type": "exit"}]}),
        ("PATCH", "/api/v1/automations/{id}") => json!({"name": "renamed"}),
        ("POST", "/api/v1/automations/{id}/enrollments") => json!({"subscriber_id": Uuid::nil()}),
        _ => panic!(
            "{} {}: no body; add one to the isolation suite",
            op.method, op.path
        ),
    })
}

fn probes(op: &Operation, victim: &Owner, p: &Planted) -> Vec<Probe> {
    if let Some(param) = op
        .params
        .iter()
        .find(|p| p.required && p.location == "header")
    {
        panic!(
            "{} {}: no value for header `{}`",
            op.method, op.path, param.name
        );
    }
    let mut foreign = op.path.clone();
    let mut shared = Some(op.path.clone());
    let mut has_path_id = false;
    for param in op.params.iter().filter(|p| p.location == "path") {
        let (own, planted) = path_value(&op.path, &param.name, victim, p);
        let placeholder = format!("{{{}}}", param.name);
        foreign = foreign.replace(&placeholder, &own);
        shared = shared
            .zip(planted)
            .map(|(path, v)| path.replace(&placeholder, &v));
        has_path_id = true;
    }
    // Required query parameters are in every call, with the victim's first value.
    let query_params: Vec<(&Param, Vec<String>)> = op
        .params
        .iter()
        .filter(|p| p.location == "query")
        .filter_map(|param| query_values(param, victim, p).map(|values| (param, values)))
        .collect();
    let base: Vec<(String, String)> = query_params
        .iter()
        .filter(|(param, _)| param.required || param.name == "format")
        .map(|(param, values)| (param.name.clone(), values[0].clone()))
        .collect();
    let body = body_for(op);
    let probe = |path: &str, query: Vec<(String, String)>, foreign_path_id| Probe {
        path: path.to_owned(),
        query,
        body: body.clone(),
        foreign_path_id,
    };
    let mut probes = vec![probe(&foreign, base.clone(), has_path_id)];
    if let Some(path) = shared.filter(|_| has_path_id) {
        probes.push(probe(&path, base.clone(), false));
    }
    // Every other value of each parameter in a call of its own (a required one's first value
    // is already in `base`).
    for (param, values) in &query_params {
        for value in values.iter().skip(usize::from(param.required)) {
            let mut query = base.clone();
            query.retain(|(k, _)| *k != param.name);
            query.push((param.name.clone(), value.clone()));
            probes.push(probe(&foreign, query, false));
        }
    }
    probes
}

async fn check(
    h: &Harness,
    op: &Operation,
    probe: &Probe,
    caller: &Owner,
    victim: &Owner,
    violations: &mut Vec<String>,
) {
    let url = probe_url(probe);
    let before = victim_rows(h, op, victim).await;
    let (status, body) = send(h, &caller.key, op.method.clone(), &url, probe.body.clone()).await;
    let what = format!(
        "{} {} as {} with {}'s ids",
        op.method, url, caller.label, victim.label
    );
    let text = body.to_string();
    if status == 404 {
        if !body["code"]
            .as_str()
            .is_some_and(|c| c.ends_with("NOT_FOUND"))
        {
            violations.push(format!("{what}: 404 outside the envelope: {text}"));
        }
    } else if status >= 500 {
        violations.push(format!("{what}: {status} {}", excerpt(&text)));
    } else {
        let leaked: Vec<&str> = std::iter::once(victim.marker.as_str())
            .chain(victim.ids.difference(&caller.ids).map(String::as_str))
            .filter(|s| text.contains(s))
            .collect();
        if !leaked.is_empty() {
            violations.push(format!(
                "{what}: {status} shows {leaked:?}: {}",
                excerpt(&text)
            ));
        }
        if op.method == Method::DELETE && probe.foreign_path_id {
            violations.push(format!(
                "{what}: {status} (404 expected): {}",
                excerpt(&text)
            ));
        }
    }
    if let Some(before) = before {
        let after = victim_rows(h, op, victim).await.unwrap();
        if !before.is_subset(&after) {
            let gone: Vec<_> = before.difference(&after).collect();
            violations.push(format!("{what}: {}'s {gone:?} are gone", victim.label));
        }
    }
}

/// What a DELETE could remove from the victim, read as the victim (or, where no route shows
/// it, from the database); `None` for other methods. Panics for an unknown DELETE route.
async fn victim_rows(h: &Harness, op: &Operation, victim: &Owner) -> Option<BTreeSet<String>> {
    if op.method != Method::DELETE {
        return None;
    }
    Some(match op.path.as_str() {
        "/api/v1/suppressions/{email}" => {
            let (status, body) = send(
                h,
                &victim.key,
                Method::GET,
                "/api/v1/suppressions?limit=100",
                None,
            )
            .await;
            assert_eq!(status, 200, "{body}");
            body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["email"].as_str().unwrap().to_owned())
                .collect()
        }
        "/api/v1/api-keys/{id}" => h
            .query(&format!(
                "SELECT id::text FROM api_keys WHERE project_id = '{}' AND revoked_at IS NULL",
                victim.project
            ))
            .await
            .into_iter()
            .collect(),
        "/api/v1/delivery/provider" => h
            .query(&format!(
                "SELECT 'provider' FROM project_delivery \
                 WHERE project_id = '{}' AND provider_config IS NOT NULL",
                victim.project
            ))
            .await
            .into_iter()
            .collect(),
        "/api/v1/templates/{id}" => own_rows(h, "templates", victim).await,
        "/api/v1/language-model" => h
            .query(&format!(
                "SELECT model FROM project_language_models WHERE project_id = '{}'",
                victim.project
            ))
            .await
            .into_iter()
            .collect(),
        "/api/v1/campaigns/{id}" => own_rows(h, "campaigns", victim).await,
        "/api/v1/campaign-steps/{id}" => own_rows(h, "campaign_steps", victim).await,
        "/api/v1/webhook-subscriptions/{id}" => own_rows(h, "webhook_subscriptions", victim).await,
        "/api/v1/forms/{id}" => own_rows(h, "forms", victim).await,
        "/api/v1/platforms/connections/{id}" => own_rows(h, "platform_connections", victim).await,
        "/api/v1/platforms/commerce/{id}" => own_rows(h, "commerce_sources", victim).await,
        "/api/v1/platforms/triggers/{id}" => own_rows(h, "platform_triggers", victim).await,
        "/api/v1/social/posts/{id}" => own_rows(h, "social_posts", victim).await,
        "/api/v1/content/blocks/{id}" => own_rows(h, "content_blocks", victim).await,
        "/api/v1/content/sources/{id}" => own_rows(h, "content_sources", victim).await,
        "/api/v1/automations/{id}" => own_rows(h, "automations", victim).await,
        "/api/v1/chat-alerts" => h
            .query(&format!(
                "SELECT project_id::text FROM chat_alerts WHERE project_id = '{}'",
                victim.project
            ))
            .await
            .into_iter()
            .collect(),
        "/api/v1/campaigns/{id}/enrollments/{contact_id}" => h
            .query(&format!(
                "SELECT id::text || status FROM enrollments WHERE project_id = '{}'",
                victim.project
            ))
            .await
            .into_iter()
            .collect(),
        "/api/v1/segments/{id}" => h
            .query(&format!(
                "SELECT id::text FROM segments WHERE project_id = '{}'",
                victim.project
            ))
            .await
            .into_iter()
            .collect(),
        "/api/v1/contacts/{id}/personal-data" => h
            .query(&format!(
                "SELECT id::text || email FROM contacts WHERE project_id = '{}'",
                victim.project
            ))
            .await
            .into_iter()
            .collect(),
        path => panic!("DELETE {path}: say how the victim's rows are read in the isolation suite"),
    })
}

/// The ids of the victim's rows of `table`.
async fn own_rows(h: &Harness, table: &str, victim: &Owner) -> BTreeSet<String> {
    h.query(&format!(
        "SELECT id::text FROM {table} WHERE project_id = '{}'",
        victim.project
    ))
    .await
    .into_iter()
    .collect()
}

fn probe_url(probe: &Probe) -> String {
    with_query(&probe.path, &probe.query)
}

/// After every probe: the project's own rows are still there and its own.
async fn still_intact(h: &Harness, owner: &Owner) -> Vec<String> {
    let mut violations = Vec::new();
    let checks = [
        format!("/api/v1/emails/{}", owner.email),
        format!("/api/v1/contacts?search={}", owner.marker),
        format!("/api/v1/analytics/overview?site_id={}", owner.site),
        format!("/api/v1/export?format=json&site_id={}", owner.site),
    ];
    for path in checks {
        let (status, body) = send(h, &owner.key, Method::GET, &path, None).await;
        if status != 200 {
            violations.push(format!("{}: {path}: {status} {body}", owner.label));
        }
    }
    // Neither renamed nor overwritten by another project's writes.
    let own = [
        format!("/api/v1/sites/{}", owner.site),
        format!("/api/v1/sites/{}/brand-voice", owner.site),
        format!("/api/v1/templates/{}", owner.template),
        format!("/api/v1/segments/{}", owner.segment),
        format!("/api/v1/campaigns/{}", owner.campaign),
        format!("/api/v1/campaign-steps/{}", owner.step),
        format!("/api/v1/webhook-subscriptions/{}", owner.webhook),
        format!("/api/v1/domains/{}", owner.domain),
        format!("/api/v1/drafts/{}", owner.draft),
        format!("/api/v1/approvals/{}", owner.approval),
        format!("/api/v1/ab-tests/{}", owner.ab_test),
        format!("/api/v1/forms/{}", owner.form),
        format!("/api/v1/content/blocks/{}", owner.block),
        format!("/api/v1/automations/{}", owner.automation),
    ];
    for path in own {
        let (status, body) = send(h, &owner.key, Method::GET, &path, None).await;
        if status != 200 || !body.to_string().contains(&owner.marker) {
            violations.push(format!("{}: {path}: {status} {body}", owner.label));
        }
    }
    let (_, suppressions) = send(h, &owner.key, Method::GET, "/api/v1/suppressions", None).await;
    if !suppressions.to_string().contains(&owner.suppression) {
        violations.push(format!("{}: {} is gone", owner.label, owner.suppression));
    }
    violations
}

/// The contact routes that name another project's ids in their body (the walk above calls POST
/// only on a path id): each answers 404, and nothing of the other project changes, also when
/// a call names an address both projects could hold.
#[tokio::test]
async fn contact_writes_naming_another_projects_ids_answer_404_and_change_nothing() {
    let h = Harness::new().await;
    let (mine, theirs) = (h.tenant(Plan::Managed).await, h.tenant(Plan::Managed).await);
    let my_site = h.site(&mine.admin, "minebulk").await;
    let their_site = h.site(&theirs.admin, "theirsbulk").await;
    let mut ids = Vec::new();
    for (key, email, site) in [
        (&mine.admin, "mine@example.com", &my_site),
        (&theirs.admin, "shared@example.com", &their_site),
        (&theirs.admin, "info@example.com", &their_site),
    ] {
        let body = json!({"email": email, "site_id": site, "tags": ["kept"],
                          "properties": {"note": "kept"}});
        let (status, answer) = send(&h, key, Method::POST, "/api/v1/contacts", Some(body)).await;
        assert_eq!(status, 201, "{answer}");
        ids.push(id_of(&answer, "contact_id"));
    }
    let (my_contact, their_contact) = (&ids[0], &ids[1]);
    let snapshot = async || -> Vec<Value> {
        let mut state = Vec::new();
        for path in [
            "/api/v1/contacts?limit=100".to_owned(),
            "/api/v1/suppressions".to_owned(),
            "/api/v1/hygiene/config".to_owned(),
            format!("/api/v1/hygiene/audit?site_id={their_site}"),
            format!("/api/v1/contacts/{their_contact}"),
        ] {
            let (status, body) = send(&h, &theirs.admin, Method::GET, &path, None).await;
            assert_eq!(status, 200, "{path}: {body}");
            state.push(body);
        }
        state
    };
    let before = snapshot().await;
    let refused = [
        (
            "/api/v1/contacts/tags",
            json!({"contact_ids": [their_contact], "set": []}),
        ),
        (
            "/api/v1/contacts/tags",
            json!({"contact_ids": [my_contact, their_contact], "add": ["x"]}),
        ),
        (
            "/api/v1/contacts/merge",
            json!({"target_id": my_contact, "source_ids": [their_contact]}),
        ),
        (
            "/api/v1/contacts/merge",
            json!({"target_id": their_contact, "source_ids": [my_contact]}),
        ),
        (
            "/api/v1/contacts/import",
            json!({"site_id": their_site, "contacts": [{"email": "shared@example.com"}]}),
        ),
        (
            "/api/v1/contacts/unsubscribe",
            json!({"email": "shared@example.com", "site_id": their_site}),
        ),
        ("/api/v1/hygiene/run", json!({"site_id": their_site})),
    ];
    for (path, body) in refused {
        let (status, answer) = send(&h, &mine.admin, Method::POST, path, Some(body.clone())).await;
        assert_eq!(status, 404, "{path} {body}: {answer}");
        assert!(
            answer["code"].as_str().unwrap().ends_with("NOT_FOUND"),
            "{answer}"
        );
    }
    // Names both projects could hold act on the caller's project only.
    let own = [
        (
            "/api/v1/contacts/unsubscribe",
            json!({"email": "shared@example.com"}),
        ),
        (
            "/api/v1/contacts/unsubscribe",
            json!({"email": "info@example.com"}),
        ),
        ("/api/v1/hygiene/run", json!({})),
    ];
    let (status, _) = send(
        &h,
        &mine.admin,
        Method::PUT,
        "/api/v1/hygiene/config",
        Some(json!({"suppress_role_addresses": true})),
    )
    .await;
    assert_eq!(status, 200);
    for (path, body) in own {
        let (status, answer) = send(&h, &mine.admin, Method::POST, path, Some(body)).await;
        assert_eq!(status, 200, "{path}: {answer}");
        assert!(
            !answer.to_string().contains(their_contact.as_str()),
            "{answer}"
        );
    }
    assert_eq!(snapshot().await, before, "the other project changed");
    h.stop().await;
}

/// Tool groups on REST, walked over the committed document: for each group a tool's route
/// belongs to, an admin key limited to that group calls every `/api/v1` operation; each one
/// outside the group answers 403 `TOOL_GROUP_FORBIDDEN` (and does nothing), each one inside
/// answers something else. Every operation has a group, and every group entry an operation.
#[tokio::test]
async fn a_key_limited_to_one_group_reaches_only_that_groups_routes() {
    use mail_api::http::groups::{ROUTE_GROUPS, groups_of};

    let h = Harness::with(|url| {
        let mut settings = crate::common::settings(url);
        settings.common.rate_limit.scale = 100.0;
        settings
    })
    .await;
    let operations: Vec<Operation> = document::operations(&document::load(
        env!("CARGO_MANIFEST_DIR"),
        "mail-api.openapi.json",
    ))
    .into_iter()
    .filter(|op| {
        op.needs_credential
            && (op.path.starts_with("/api/v1/") || op.path.starts_with("/api/integrations/"))
    })
    .collect();
    assert!(operations.len() >= 100, "{}", operations.len());
    let mut problems = Vec::new();
    for op in &operations {
        if groups_of(op.method.as_str(), &op.path).is_none() {
            problems.push(format!("{} {} has no tool group", op.method, op.path));
        }
    }
    for (method, path, _) in ROUTE_GROUPS {
        if !operations
            .iter()
            .any(|op| op.method.as_str() == *method && op.path == *path)
        {
            problems.push(format!(
                "{method} {path} is not an operation of the document"
            ));
        }
    }
    let mut groups: Vec<_> = ROUTE_GROUPS
        .iter()
        .flat_map(|(_, _, groups)| groups.iter().copied())
        .collect();
    groups.sort();
    groups.dedup();
    let mut calls = 0;
    for group in groups {
        let mut conn = h.conn().await;
        let project = project(&mut conn, Plan::Enterprise).await;
        let (_, key) = credentials::create_key(
            &mut conn,
            project,
            "one group",
            Scope::Admin,
            Some(vec![group.as_str().to_owned()]),
            None,
        )
        .await
        .unwrap();
        for op in &operations {
            let inside =
                groups_of(op.method.as_str(), &op.path).is_some_and(|g| g.contains(&group));
            let path = op.params.iter().filter(|p| p.location == "path").fold(
                op.path.clone(),
                |path, p| {
                    let value = match p.name.as_str() {
                        "email" => "walk@example.com".to_owned(),
                        _ => Uuid::now_v7().to_string(),
                    };
                    path.replace(&format!("{{{}}}", p.name), &value)
                },
            );
            let body = op.has_body.then(|| json!({}));
            let (status, answer) = send(&h, &key.plaintext, op.method.clone(), &path, body).await;
            calls += 1;
            let refused = status == 403 && answer["code"] == "TOOL_GROUP_FORBIDDEN";
            if refused == inside {
                problems.push(format!(
                    "{} {} with a key of {}: {status} {}",
                    op.method,
                    op.path,
                    group.as_str(),
                    excerpt(&answer.to_string())
                ));
            }
        }
    }
    assert!(calls >= 10 * operations.len(), "{calls} calls");
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    h.stop().await;
}
