//! The tool group of every `/api/v1` route, declared once here: the group of the MCP tools that
//! mirror the route (several when tools of several groups do), or, for a route no tool
//! mirrors, the group of the tools of its resource. A key limited to tool groups is held to
//! them on REST as on MCP: [`enforce`] answers 403 `TOOL_GROUP_FORBIDDEN` before the route
//! reads anything. A route missing from the table is refused to every limited key (a test
//! holds the table and the OpenAPI document together).

use std::collections::HashMap;
use std::sync::OnceLock;

use actix_web::HttpMessage as _;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use auth::Caller;
use http_kit::ApiError;

use crate::domain::error_code::MailErrorCode;
use crate::domain::tool_group::Group::{self, *};

/// `(method, path, groups)`, the path as the OpenAPI document writes it.
pub const ROUTE_GROUPS: &[(&str, &str, &[Group])] = &[
    // Sites: `get_sites` is an analytics tool; the rest are the sites group's.
    ("GET", "/api/v1/sites", &[Analytics]),
    ("POST", "/api/v1/sites", &[Sites]),
    ("GET", "/api/v1/sites/{id}", &[Sites]),
    ("PATCH", "/api/v1/sites/{id}", &[Sites]),
    ("GET", "/api/v1/sites/{id}/brand-voice", &[Sites]),
    ("PUT", "/api/v1/sites/{id}/brand-voice", &[Sites]),
    ("GET", "/api/v1/sites/{id}/send-policy", &[Sites]),
    ("PUT", "/api/v1/sites/{id}/send-policy", &[Sites]),
    ("GET", "/api/v1/sites/{id}/warmup", &[Warmup]),
    ("PUT", "/api/v1/sites/{id}/warmup", &[Warmup]),
    ("POST", "/api/v1/sites/{id}/warmup/pause", &[Warmup]),
    ("POST", "/api/v1/sites/{id}/warmup/resume", &[Warmup]),
    ("GET", "/api/v1/sites/{id}/schedule", &[Campaigns]),
    ("GET", "/api/v1/sites/{id}/insights", &[Analytics]),
    ("GET", "/api/v1/sites/{id}/abuse-monitor", &[Analytics]),
    // The advisor and the compound tools.
    ("GET", "/api/v1/sites/{id}/send-time", &[Advisor]),
    ("GET", "/api/v1/sites/{id}/recovery-plan", &[Advisor]),
    ("GET", "/api/v1/advisor/campaigns", &[Advisor]),
    ("GET", "/api/v1/advisor/portfolio", &[Advisor]),
    ("POST", "/api/v1/advisor/subject-lines", &[Advisor]),
    ("POST", "/api/v1/advisor/content-topics", &[Advisor]),
    ("GET", "/api/v1/advisor/diagnosis", &[Compound]),
    ("POST", "/api/v1/onboarding", &[Compound]),
    ("POST", "/api/v1/briefs/template", &[Compound]),
    ("POST", "/api/v1/briefs/campaign", &[Compound]),
    (
        "POST",
        "/api/v1/sites/{id}/abuse-monitor/override",
        &[Analytics],
    ),
    // Social publishing: posts are the social-posts group's; campaigns, their posts and the
    // connected accounts analytics' (the tools that name them).
    ("GET", "/api/v1/social/posts", &[SocialPosts]),
    ("POST", "/api/v1/social/posts", &[SocialPosts]),
    ("GET", "/api/v1/social/posts/{id}", &[SocialPosts]),
    ("PATCH", "/api/v1/social/posts/{id}", &[SocialPosts]),
    ("DELETE", "/api/v1/social/posts/{id}", &[SocialPosts]),
    ("POST", "/api/v1/social/posts/adapt", &[SocialPosts]),
    ("GET", "/api/v1/social/campaigns", &[Analytics]),
    ("POST", "/api/v1/social/campaigns", &[Analytics]),
    ("POST", "/api/v1/social/campaigns/{id}/posts", &[Analytics]),
    ("GET", "/api/v1/social/accounts", &[SocialPosts, Analytics]),
    (
        "POST",
        "/api/v1/social/accounts/{platform}",
        &[SocialPosts, Analytics],
    ),
    (
        "GET",
        "/api/integrations/social/{platform}/connect",
        &[SocialPosts, Analytics],
    ),
    // Own sending domains and the delivery settings: delivery-ops.
    ("GET", "/api/v1/domains", &[DeliveryOps]),
    ("POST", "/api/v1/domains", &[DeliveryOps]),
    ("GET", "/api/v1/domains/{id}", &[DeliveryOps]),
    ("POST", "/api/v1/domains/{id}/refresh", &[DeliveryOps]),
    ("GET", "/api/v1/sites/{id}/dnsbl", &[DeliveryOps]),
    (
        "GET",
        "/api/v1/sites/{id}/dnsbl/delisting-draft",
        &[DeliveryOps],
    ),
    // Engagement scoring: delivery-ops tools.
    ("GET", "/api/v1/scoring-rules", &[DeliveryOps]),
    ("PUT", "/api/v1/scoring-rules", &[DeliveryOps]),
    ("GET", "/api/v1/contacts/{id}/score", &[DeliveryOps]),
    ("GET", "/api/v1/sites/{id}/deliverability", &[Analytics]),
    ("GET", "/api/v1/sites/{id}/domain-health", &[Analytics]),
    ("PUT", "/api/v1/delivery/provider", &[DeliveryOps]),
    ("DELETE", "/api/v1/delivery/provider", &[DeliveryOps]),
    ("POST", "/api/v1/delivery/provider/test", &[DeliveryOps]),
    ("POST", "/api/v1/delivery/webhook-secret", &[DeliveryOps]),
    ("GET", "/api/v1/language-model", &[DeliveryOps]),
    ("PUT", "/api/v1/language-model", &[DeliveryOps]),
    ("DELETE", "/api/v1/language-model", &[DeliveryOps]),
    ("GET", "/api/v1/ops/dlq", &[DeliveryOps]),
    ("GET", "/api/v1/ops/cron-runs", &[DeliveryOps]),
    ("GET", "/api/v1/export", &[DeliveryOps]),
    // Contacts, suppressions, hygiene and the email log: contacts.
    ("POST", "/api/v1/identify", &[Contacts]),
    ("GET", "/api/v1/contacts", &[Contacts]),
    ("POST", "/api/v1/contacts", &[Contacts]),
    ("GET", "/api/v1/contacts/{id}", &[Contacts]),
    ("PATCH", "/api/v1/contacts/{id}", &[Contacts]),
    ("POST", "/api/v1/contacts/tags", &[Contacts]),
    ("POST", "/api/v1/contacts/unsubscribe", &[Contacts]),
    ("POST", "/api/v1/contacts/import", &[Contacts]),
    ("GET", "/api/v1/contacts/{id}/export", &[Contacts]),
    ("GET", "/api/v1/contacts/{id}/timeline", &[Contacts]),
    ("GET", "/api/v1/contacts/schema", &[Contacts]),
    ("GET", "/api/v1/contacts/duplicates", &[Contacts]),
    ("POST", "/api/v1/contacts/merge", &[Contacts]),
    ("GET", "/api/v1/contacts/inactive", &[Contacts]),
    ("GET", "/api/v1/hygiene/config", &[Contacts]),
    ("PUT", "/api/v1/hygiene/config", &[Contacts]),
    ("POST", "/api/v1/hygiene/run", &[Contacts]),
    ("GET", "/api/v1/hygiene/audit", &[Contacts]),
    ("GET", "/api/v1/suppressions", &[Contacts]),
    ("POST", "/api/v1/suppressions", &[Contacts]),
    ("DELETE", "/api/v1/suppressions/{email}", &[Contacts]),
    ("GET", "/api/v1/emails", &[Contacts]),
    ("GET", "/api/v1/emails/{id}", &[Contacts]),
    ("GET", "/api/v1/emails/{id}/events", &[Contacts]),
    ("GET", "/api/v1/segments/{id}/contacts", &[Contacts]),
    ("POST", "/api/v1/segments/estimate", &[Contacts]),
    ("GET", "/api/v1/segments/win-back", &[Contacts]),
    // Approvals and their policy.
    ("GET", "/api/v1/approvals", &[Approvals]),
    ("GET", "/api/v1/approvals/{id}", &[Approvals]),
    ("POST", "/api/v1/approvals/{id}/approve", &[Approvals]),
    ("POST", "/api/v1/approvals/{id}/reject", &[Approvals]),
    ("GET", "/api/v1/approval-policy", &[Approvals]),
    ("PUT", "/api/v1/approval-policy", &[Approvals]),
    // A/B tests.
    ("GET", "/api/v1/ab-tests", &[AbTesting]),
    ("POST", "/api/v1/ab-tests", &[AbTesting]),
    ("GET", "/api/v1/ab-tests/{id}", &[AbTesting]),
    ("GET", "/api/v1/ab-tests/{id}/significance", &[AbTesting]),
    ("POST", "/api/v1/ab-tests/{id}/promote", &[AbTesting]),
    // Drafts.
    ("GET", "/api/v1/drafts", &[Drafts]),
    ("POST", "/api/v1/drafts", &[Drafts]),
    ("GET", "/api/v1/drafts/{id}", &[Drafts]),
    ("POST", "/api/v1/drafts/{id}/approve", &[Drafts]),
    ("POST", "/api/v1/drafts/{id}/reject", &[Drafts]),
    ("POST", "/api/v1/drafts/{id}/promote", &[Drafts]),
    // Segments.
    ("GET", "/api/v1/segments", &[Segments]),
    ("POST", "/api/v1/segments", &[Segments]),
    ("GET", "/api/v1/segments/{id}", &[Segments]),
    ("PATCH", "/api/v1/segments/{id}", &[Segments]),
    ("DELETE", "/api/v1/segments/{id}", &[Segments]),
    ("POST", "/api/v1/segments/preview", &[Segments]),
    ("POST", "/api/v1/segments/from-description", &[Segments]),
    // Campaigns, their steps and enrollments, sending and previews: campaigns.
    ("GET", "/api/v1/campaigns", &[Campaigns]),
    ("POST", "/api/v1/campaigns", &[Campaigns]),
    ("POST", "/api/v1/campaigns/launch", &[Campaigns]),
    ("GET", "/api/v1/campaigns/calendar", &[Campaigns]),
    ("GET", "/api/v1/campaigns/{id}", &[Campaigns]),
    ("PATCH", "/api/v1/campaigns/{id}", &[Campaigns]),
    ("DELETE", "/api/v1/campaigns/{id}", &[Campaigns]),
    ("POST", "/api/v1/campaigns/{id}/status", &[Campaigns]),
    ("POST", "/api/v1/campaigns/{id}/clone", &[Campaigns]),
    ("GET", "/api/v1/campaigns/{id}/audience", &[Campaigns]),
    ("GET", "/api/v1/campaigns/{id}/steps", &[Campaigns]),
    ("POST", "/api/v1/campaigns/{id}/steps", &[Campaigns]),
    ("GET", "/api/v1/campaign-steps/{id}", &[Campaigns]),
    ("PATCH", "/api/v1/campaign-steps/{id}", &[Campaigns]),
    ("DELETE", "/api/v1/campaign-steps/{id}", &[Campaigns]),
    ("GET", "/api/v1/campaigns/{id}/enrollments", &[Campaigns]),
    ("POST", "/api/v1/campaigns/{id}/enrollments", &[Campaigns]),
    (
        "POST",
        "/api/v1/campaigns/{id}/segment-enrollments",
        &[Campaigns],
    ),
    (
        "GET",
        "/api/v1/campaigns/{id}/enrollments/{contact_id}",
        &[Campaigns],
    ),
    (
        "DELETE",
        "/api/v1/campaigns/{id}/enrollments/{contact_id}",
        &[Campaigns],
    ),
    ("POST", "/api/v1/emails/generate", &[Campaigns]),
    ("POST", "/api/v1/emails/preview", &[Campaigns]),
    ("POST", "/api/v1/templates/validate", &[Campaigns]),
    ("POST", "/api/v1/send", &[Campaigns]),
    // Templates.
    ("GET", "/api/v1/templates", &[Templates]),
    ("POST", "/api/v1/templates", &[Templates]),
    ("GET", "/api/v1/templates/{id}", &[Templates]),
    ("PATCH", "/api/v1/templates/{id}", &[Templates]),
    ("DELETE", "/api/v1/templates/{id}", &[Templates]),
    ("POST", "/api/v1/templates/{id}/translate", &[Templates]),
    // Events, conversions and the reports: analytics.
    ("GET", "/api/v1/events", &[Analytics]),
    ("POST", "/api/v1/events", &[Analytics]),
    ("POST", "/api/v1/conversion", &[Analytics]),
    ("GET", "/api/v1/analytics/overview", &[Analytics]),
    ("GET", "/api/v1/analytics/campaigns", &[Analytics]),
    ("GET", "/api/v1/analytics/conversion", &[Analytics]),
    ("GET", "/api/v1/analytics/performance", &[Analytics]),
    ("GET", "/api/v1/analytics/portfolio", &[Analytics]),
    ("GET", "/api/v1/analytics/totals", &[Analytics]),
    ("GET", "/api/v1/analytics/engagement", &[Analytics]),
    ("GET", "/api/v1/project", &[Analytics]),
    // The plan and the team: org.
    ("GET", "/api/v1/plan", &[Org]),
    ("GET", "/api/v1/team", &[Org]),
    ("POST", "/api/v1/team", &[Org]),
    // Keys, notifications and the full export: data.
    ("GET", "/api/v1/api-keys", &[Data]),
    ("POST", "/api/v1/api-keys", &[Data]),
    ("DELETE", "/api/v1/api-keys/{id}", &[Data]),
    ("GET", "/api/v1/notifications", &[Data]),
    ("POST", "/api/v1/notifications/read", &[Data]),
    ("GET", "/api/v1/export/full", &[Data]),
    // Other email platforms connected to migrate from: data.
    ("GET", "/api/v1/platforms/connections", &[Data]),
    ("POST", "/api/v1/platforms/connections", &[Data]),
    ("DELETE", "/api/v1/platforms/connections/{id}", &[Data]),
    (
        "POST",
        "/api/v1/platforms/connections/{id}/migrations",
        &[Data],
    ),
    ("POST", "/api/v1/platforms/imports/campaigns", &[Data]),
    ("POST", "/api/v1/platforms/imports/csv", &[Data]),
    ("GET", "/api/v1/platforms/imports", &[Data]),
    ("GET", "/api/v1/platforms/imports/{id}", &[Data]),
    // Commerce platforms' sources, triggers and events: data.
    ("GET", "/api/v1/platforms/commerce", &[Data]),
    ("POST", "/api/v1/platforms/commerce", &[Data]),
    ("DELETE", "/api/v1/platforms/commerce/{id}", &[Data]),
    ("GET", "/api/v1/platforms/triggers", &[Data]),
    ("POST", "/api/v1/platforms/triggers", &[Data]),
    ("DELETE", "/api/v1/platforms/triggers/{id}", &[Data]),
    ("GET", "/api/v1/platforms/events", &[Data]),
    // Erasure.
    ("DELETE", "/api/v1/contacts/{id}/personal-data", &[Gdpr]),
    ("GET", "/api/v1/gdpr/deletion-log", &[Gdpr]),
    // Outbound webhooks, their deliveries and the chat alerts: webhooks.
    ("GET", "/api/v1/webhook-subscriptions", &[Webhooks]),
    ("POST", "/api/v1/webhook-subscriptions", &[Webhooks]),
    ("GET", "/api/v1/webhook-subscriptions/{id}", &[Webhooks]),
    ("PATCH", "/api/v1/webhook-subscriptions/{id}", &[Webhooks]),
    ("DELETE", "/api/v1/webhook-subscriptions/{id}", &[Webhooks]),
    ("GET", "/api/v1/webhook-deliveries", &[Webhooks]),
    (
        "POST",
        "/api/v1/webhook-deliveries/{id}/replay",
        &[Webhooks],
    ),
    ("GET", "/api/v1/chat-alerts", &[Webhooks]),
    ("PUT", "/api/v1/chat-alerts", &[Webhooks]),
    ("DELETE", "/api/v1/chat-alerts", &[Webhooks]),
    // Content blocks, sources and the pipeline.
    ("GET", "/api/v1/content/blocks", &[Content]),
    ("POST", "/api/v1/content/blocks", &[Content]),
    ("GET", "/api/v1/content/blocks/{id}", &[Content]),
    ("PATCH", "/api/v1/content/blocks/{id}", &[Content]),
    ("DELETE", "/api/v1/content/blocks/{id}", &[Content]),
    ("GET", "/api/v1/content/sources", &[Content]),
    ("POST", "/api/v1/content/sources", &[Content]),
    ("DELETE", "/api/v1/content/sources/{id}", &[Content]),
    ("POST", "/api/v1/content/pipeline", &[Content]),
    // Signup forms (their public pages need no key).
    ("GET", "/api/v1/automations", &[Automations]),
    ("POST", "/api/v1/automations", &[Automations]),
    ("GET", "/api/v1/automations/{id}", &[Automations]),
    ("PATCH", "/api/v1/automations/{id}", &[Automations]),
    ("DELETE", "/api/v1/automations/{id}", &[Automations]),
    ("POST", "/api/v1/automations/{id}/activate", &[Automations]),
    ("POST", "/api/v1/automations/{id}/pause", &[Automations]),
    (
        "POST",
        "/api/v1/automations/{id}/enrollments",
        &[Automations],
    ),
    ("POST", "/api/v1/automations/{id}/trigger", &[Automations]),
    ("GET", "/api/v1/automations/{id}/preview", &[Automations]),
    ("GET", "/api/v1/forms", &[Forms]),
    ("POST", "/api/v1/forms", &[Forms]),
    ("GET", "/api/v1/forms/{id}", &[Forms]),
    ("DELETE", "/api/v1/forms/{id}", &[Forms]),
    ("GET", "/api/v1/forms/{id}/stats", &[Forms]),
    // SMS (Twilio's callbacks need no key).
    ("GET", "/api/v1/sms/provider", &[Sms]),
    ("PUT", "/api/v1/sms/provider", &[Sms]),
    ("POST", "/api/v1/sms/send", &[Sms]),
    ("POST", "/api/v1/sms/campaigns", &[Sms]),
    ("GET", "/api/v1/sms/log", &[Sms]),
    ("GET", "/api/v1/sms/inbound", &[Sms]),
    ("PUT", "/api/v1/sms/contacts/{id}/consent", &[Sms]),
    ("POST", "/api/v1/sms/cost-preview", &[Sms]),
];

/// By path: each method's groups.
type Table = HashMap<&'static str, Vec<(&'static str, &'static [Group])>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Table::new();
        for (method, path, groups) in ROUTE_GROUPS {
            table.entry(*path).or_default().push((*method, *groups));
        }
        table
    })
}

/// The groups of the route `method path` (the path as registered, `/api/v1/sites/{id}`);
/// `None` for a route the table does not know.
pub fn groups_of(method: &str, path: &str) -> Option<&'static [Group]> {
    let method = if method == Method::HEAD.as_str() {
        "GET"
    } else {
        method
    };
    table()
        .get(path)?
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, groups)| *groups)
}

/// Whether `caller` may call the route `method pattern`: a key not limited to groups may
/// call every route; a limited key the routes of its groups only.
pub fn allowed(caller: &Caller, method: &str, pattern: &str) -> bool {
    let Some(limited) = caller.tool_groups.as_ref() else {
        return true;
    };
    match groups_of(method, pattern) {
        Some(groups) => groups
            .iter()
            .any(|g| limited.iter().any(|l| l == g.as_str())),
        // Another method of a known path: the route answers 405 itself.
        None => table().contains_key(pattern),
    }
}

/// The middleware of the `/api/v1` routes (after the gate, which put the [`Caller`]).
pub async fn enforce(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let refused = {
        let extensions = req.extensions();
        // The route's pattern is looked up (a walk of the routes) only for a limited key.
        match extensions.get::<Caller>() {
            Some(caller) if caller.tool_groups.is_some() => req
                .match_pattern()
                .is_some_and(|pattern| !allowed(caller, req.method().as_str(), &pattern)),
            _ => false,
        }
    };
    if refused {
        let err = ApiError::forbidden("this key is limited to tool groups this route is not in")
            .with_code(MailErrorCode::ToolGroupForbidden);
        return Ok(req.error_response(err).map_into_right_body());
    }
    Ok(next.call(req).await?.map_into_left_body())
}
