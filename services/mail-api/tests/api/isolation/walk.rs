//! The walk: every GET, PUT, PATCH and DELETE operation of the committed document called by
//! each project with every other project's ids, each answer judged (a 404 in the envelope, or
//! nothing of the other project's), and every project's own rows checked intact afterwards.

use std::collections::BTreeSet;

use auth::Scope;
use mail_api::db::tenants;
use rate_limit::policy::Plan;
use reqwest::Method;

use test_support::document::{self, Operation, Phase, probed};
use test_support::excerpt;

use super::probes::{Probe, probe_url, probes};
use super::*;
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

/// The operations the suite calls, from the committed document.
fn operations() -> Vec<Operation> {
    probed(
        &document::load(env!("CARGO_MANIFEST_DIR"), "mail-api.openapi.json"),
        PUBLIC,
    )
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
