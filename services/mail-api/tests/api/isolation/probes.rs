//! What the walk calls: each operation's path filled with the victim's ids (and, where one
//! exists, with the value planted under every project), the query values to try, and a
//! minimal valid body. A parameter or a body it does not know fails the suite.

use test_support::document::{Operation, Param};
use test_support::with_query;

use super::*;

/// One call of an operation.
pub(super) struct Probe {
    path: String,
    query: Vec<(String, String)>,
    pub(super) body: Option<Value>,
    /// The path names the victim's own resource (not a value planted under every project).
    pub(super) foreign_path_id: bool,
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

pub(super) fn probes(op: &Operation, victim: &Owner, p: &Planted) -> Vec<Probe> {
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

pub(super) fn probe_url(probe: &Probe) -> String {
    with_query(&probe.path, &probe.query)
}
