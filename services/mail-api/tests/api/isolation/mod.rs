//! Cross-tenant isolation, driven by the committed OpenAPI document.
//!
//! Three projects (A and B in one account, C in another) each seed one of every resource, with
//! a marker of their own in every text field, and plant the same client-chosen names (contact
//! and suppression emails, an order id, an event name; a site slug is deployment-wide, so each
//! project's starts alike and ends with its label). Then every GET, PUT,
//! PATCH and DELETE operation of `proto-docs/mail-api.openapi.json` is called by each project
//! with every other project's ids: the answer is 404, or names none of the other project's
//! markers nor ids that are not also the caller's. A parameter the suite cannot fill fails it,
//! so a new route is covered (or mapped) the day it lands.
//!
//! The walk and its verdicts are in `walk`, the calls it makes in `probes`; the projects'
//! seeding is here. Besides the walk: the contact routes that name ids in their body
//! (`contacts`), and keys limited to one tool group (`tool_groups`).

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use test_support::ids::{collect_ids, id_of};

use crate::common::*;

mod contacts;
mod probes;
mod tool_groups;
mod walk;

/// A word in every project's planted texts, for search parameters.
const SHARED_WORD: &str = "isolation";

/// The delay of the seeded campaign's second step.
const CALENDAR_DELAY_MINUTES: i64 = 30;

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
