//! The tool catalog of the mail document ("MCP server and references"): every group and the
//! tools it names, with their required arguments. The registry implements a part of it; a test
//! holds the two together and the README shows the coverage.

pub use crate::domain::tool_group::Group;

/// Each group's tools as the document names them: `name(required, arguments)`.
pub const CATALOG: &[(Group, &[&str])] = &[
    (
        Group::Analytics,
        &[
            "abuse_monitor_override(siteId, reason, ttlHours)",
            "abuse_monitor_status(siteId)",
            "create_social_campaign(name, platform, destination_url)",
            "deliverability_check(site_id)",
            "get_domain_health(site_id)",
            "get_engagement_insights",
            "get_portfolio_analytics",
            "get_portfolio_stats",
            "get_site_insights(site_id)",
            "get_sites",
            "get_stats(site_id, start_date)",
            "list_event_log",
            "list_projects",
            "list_social_campaigns",
            "performance_report",
            "schedule_social_post(campaign_id, content, publisher)",
        ],
    ),
    (
        Group::Campaigns,
        &[
            "add_campaign_step(campaign_id, step_order, subject)",
            "clone_campaign(campaign_id, new_name)",
            "create_campaign(site_id, name, type)",
            "create_campaign_with_content(site_id, name, type, steps)",
            "delete_campaign(campaign_id)",
            "delete_campaign_step(step_id)",
            "enroll_contact(campaign_id, contact_id)",
            "enroll_segment(campaign_id, site_id)",
            "generate_email(site_id, brief)",
            "get_campaign(campaign_id)",
            "get_campaign_calendar(year, month)",
            "get_enrollment_status(campaign_id, contact_id)",
            "get_schedule(site_id)",
            "launch_campaign(name, site_id, emails)",
            "list_campaign_steps(campaign_id)",
            "list_campaigns",
            "preview_campaign_audience(campaign_id)",
            "preview_email",
            "send_test_email(to_email, site_id)",
            "send_transactional(to, site_id, subject)",
            "unenroll_contact(campaign_id, contact_id)",
            "update_campaign(campaign_id)",
            "update_campaign_status(campaign_id, status)",
            "update_campaign_step(step_id)",
            "validate_template(html)",
        ],
    ),
    (
        Group::Contacts,
        &[
            "add_subscriber(email, site_id)",
            "add_suppression(email)",
            "estimate_segment_size",
            "find_duplicates",
            "get_contact_schema(site_id)",
            "get_hygiene_config",
            "get_subscriber",
            "get_subscriber_timeline(subscriber_id)",
            "identify_inactive",
            "import_subscribers(contacts, site_id)",
            "list_email_log",
            "list_hygiene_audit(siteId)",
            "list_subscribers",
            "list_subscribers_by_segment",
            "list_suppressions",
            "list_win_back_draft(siteId)",
            "merge_subscribers(target_id, source_ids)",
            "remove_suppression(email)",
            "run_list_hygiene",
            "set_subscriber_tags(contact_ids)",
            "subscriber_export(contactId)",
            "unsubscribe_subscriber(email)",
            "update_hygiene_config",
            "update_subscriber(contact_id)",
        ],
    ),
    (
        Group::Segments,
        &[
            "create_segment(name, rules)",
            "create_segment_nl(name, description)",
            "delete_segment(segment_id)",
            "list_segments",
            "preview_segment",
            "update_segment(segment_id)",
        ],
    ),
    (
        Group::Drafts,
        &[
            "approve_draft(draft_id)",
            "create_draft(site_id, subject, body_html)",
            "get_draft(draft_id)",
            "list_drafts",
            "promote_draft_to_campaign(draft_id)",
            "reject_draft(draft_id)",
        ],
    ),
    (
        Group::Sites,
        &[
            "create_sender(name, slug, from_name)",
            "create_site(name, slug, from_name)",
            "get_brand_voice(site_id)",
            "update_brand_voice(site_id, brand_voice)",
            "update_site(site_id)",
        ],
    ),
    (
        Group::Gdpr,
        &["delete_subscriber_data(contact_id)", "list_deletion_log"],
    ),
    (
        Group::AbTesting,
        &[
            "check_ab_significance(test_id)",
            "create_ab_test(campaign_id, name)",
            "list_ab_tests",
            "promote_ab_winner(test_id)",
        ],
    ),
    (
        Group::Advisor,
        &[
            "campaign_advisor",
            "optimize_subject_lines(campaign_id, site_id)",
            "recovery_plan(site_id)",
            "run_portfolio_analysis",
            "suggest_content_topics(site_id)",
            "suggest_send_time(site_id)",
        ],
    ),
    (
        Group::Webhooks,
        &[
            "delete_webhook_subscription(subscription_id)",
            "list_webhook_subscriptions",
            "subscribe_webhook(url, events)",
            "update_webhook_subscription(subscription_id)",
        ],
    ),
    (
        Group::Approvals,
        &["check_approval(approval_id)", "list_pending_approvals"],
    ),
    (
        Group::Automations,
        &[
            "enroll_automation(subscriber_id)",
            "list_automations",
            "preview_automation(source_id)",
            "trigger_automation(source_id)",
        ],
    ),
    (
        Group::Templates,
        &[
            "create_template(name, brief)",
            "delete_template(id)",
            "get_template(id)",
            "list_templates",
            "translate_template",
            "update_template(id)",
        ],
    ),
    (
        Group::DeliveryOps,
        &[
            "dnsbl_check(siteId)",
            "dnsbl_delisting_draft(siteId, zone)",
            "explain_contact_score",
            "export_data(resource)",
            "get_cron_runs",
            "get_queue_status",
            "get_scoring_rules",
            "get_send_dlq",
            "list_domains",
            "refresh_domain_dns(domain_id)",
            "register_domain(site_id, domain)",
            "update_scoring_rules",
        ],
    ),
    (
        Group::Compound,
        &[
            "create_template_from_brief(site_id, name, brief)",
            "diagnose_delivery_issue",
            "onboard_new_site(name, domain)",
            "setup_campaign_from_brief(site_id, campaign_name, brief)",
        ],
    ),
    (
        Group::Data,
        &[
            "configure_platform_trigger(platform, event_type, action)",
            "connect_platform(platform, credentials)",
            "create_api_key(name)",
            "disconnect_platform",
            "list_api_keys",
            "list_connected_platforms",
            "list_import_history",
            "list_notifications",
            "list_platform_events",
            "mark_notifications_read",
            "migrate_campaigns_from(provider, oauth_token)",
            "revoke_api_key(key_id)",
            "start_platform_migration(connection_id)",
            "tenant_export_full(siteId)",
        ],
    ),
    (
        Group::Content,
        &[
            "create_content_block(name, html)",
            "delete_content_block(block_id)",
            "list_content_blocks",
            "list_content_sources",
            "trigger_content_pipeline",
        ],
    ),
    (
        Group::Warmup,
        &[
            "get_warmup_status(site_id)",
            "pause_warmup(site_id)",
            "resume_warmup(site_id)",
            "update_warmup_schedule(site_id)",
        ],
    ),
    (
        Group::Forms,
        &[
            "create_form(site_id, name, fields)",
            "get_form_stats(form_id)",
            "list_forms",
        ],
    ),
    (
        Group::Org,
        &[
            "get_plan_limits",
            "get_plan_usage",
            "invite_team_member(email)",
            "list_team_members",
        ],
    ),
    (
        Group::Sms,
        &[
            "get_sms_provider_status",
            "list_sms_inbound",
            "list_sms_log",
            "preview_sms_cost(body)",
            "send_sms(body)",
            "send_sms_campaign(site_id, name, body)",
            "set_contact_sms_consent(contact_id, status)",
        ],
    ),
    (
        Group::SocialPosts,
        &[
            "adapt_social_post(email_campaign_id, platforms)",
            "create_social_post(title, content, platforms)",
            "delete_social_post(post_id)",
            "get_social_post(post_id)",
            "list_social_posts",
            "update_social_post(post_id)",
        ],
    ),
];

/// Tools the service adds to a group beyond the document's catalog, each the door of a route
/// the document leaves to the implementation (not counted in the coverage table).
pub const EXTENSIONS: &[(Group, &[&str])] = &[(
    Group::Data,
    // Issue 50's CSV exports, beside the platform migrations of the same group.
    &["import_platform_csv(site_id, layout)"],
)];

/// The catalog entry `name(...)` of `tool` (or the [`EXTENSIONS`]' entry), with its group.
pub fn entry(tool: &str) -> Option<(Group, &'static str)> {
    CATALOG.iter().chain(EXTENSIONS).find_map(|(group, tools)| {
        tools
            .iter()
            .find(|entry| entry.split('(').next() == Some(tool))
            .map(|entry| (*group, *entry))
    })
}

/// The required arguments the catalog lists for `entry` (`name(a, b)` → `[a, b]`).
pub fn required_arguments(entry: &str) -> Vec<&str> {
    entry
        .split_once('(')
        .map(|(_, args)| args.trim_end_matches(')').split(", ").collect())
        .unwrap_or_default()
}

/// The README's coverage table: per group, the tools `implemented` of those the catalog names.
pub fn coverage_table(implemented: &[&str]) -> String {
    let mut out =
        String::from("| group | implemented | named | tools implemented |\n|---|---|---|---|\n");
    let (mut done, mut named) = (0, 0);
    for (group, tools) in CATALOG {
        let here: Vec<&str> = tools
            .iter()
            .filter_map(|entry| entry.split('(').next())
            .filter(|name| implemented.contains(name))
            .collect();
        done += here.len();
        named += tools.len();
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            group.as_str(),
            here.len(),
            tools.len(),
            here.join(", ")
        ));
    }
    out.push_str(&format!("| **all** | **{done}** | **{named}** | |\n"));
    out
}
