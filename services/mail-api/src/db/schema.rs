// The tables of migrations/mail, as diesel sees them.

diesel::table! {
    accounts (id) {
        id -> Uuid,
        name -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    projects (id) {
        id -> Uuid,
        account_id -> Uuid,
        name -> Text,
        plan -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        project_id -> Uuid,
        name -> Text,
        scope -> Text,
        tool_groups -> Nullable<Array<Text>>,
        key_hash -> Bytea,
        key_prefix -> Text,
        created_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
        agent -> Bool,
        approve -> Bool,
    }
}

diesel::table! {
    sites (id) {
        id -> Uuid,
        project_id -> Uuid,
        name -> Text,
        slug -> Text,
        from_name -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        tracking_host -> Nullable<Text>,
    }
}

diesel::table! {
    project_usage (project_id) {
        project_id -> Uuid,
        contacts -> BigInt,
    }
}

diesel::table! {
    contacts (id) {
        id -> Uuid,
        project_id -> Uuid,
        email -> Text,
        first_name -> Nullable<Text>,
        last_name -> Nullable<Text>,
        properties -> Jsonb,
        tags -> Array<Text>,
        attribution -> Jsonb,
        source -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    contact_sites (contact_id, site_id) {
        contact_id -> Uuid,
        site_id -> Uuid,
        status -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    campaigns (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        name -> Text,
        #[sql_name = "type"]
        kind -> Text,
        status -> Text,
        trigger_event_name -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        accepts_new_contacts -> Bool,
        completed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    campaign_steps (id) {
        id -> Uuid,
        project_id -> Uuid,
        campaign_id -> Uuid,
        step_order -> Integer,
        delay_minutes -> Double,
        subject -> Text,
        html -> Nullable<Text>,
        text_body -> Nullable<Text>,
        template_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    events (id) {
        id -> Uuid,
        project_id -> Uuid,
        contact_id -> Uuid,
        name -> Text,
        data -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    enrollments (id) {
        id -> Uuid,
        project_id -> Uuid,
        campaign_id -> Uuid,
        contact_id -> Uuid,
        status -> Text,
        source -> Text,
        event_id -> Nullable<Uuid>,
        enrolled_at -> Timestamptz,
        updated_at -> Timestamptz,
        current_step -> Integer,
        next_step_at -> Nullable<Timestamptz>,
        exit_reason -> Nullable<Text>,
        ended_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    email_log (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        contact_id -> Nullable<Uuid>,
        campaign_id -> Nullable<Uuid>,
        to_email -> Text,
        subject -> Text,
        status -> Text,
        provider_message_id -> Nullable<Text>,
        open_count -> Integer,
        clicked_urls -> Array<Text>,
        created_at -> Timestamptz,
        sent_at -> Nullable<Timestamptz>,
        last_opened_at -> Nullable<Timestamptz>,
        last_clicked_at -> Nullable<Timestamptz>,
    }
}

// The columns of `email_log` that transactional send added (migration 000005 and later), as a second
// view of the same table: diesel's tables hold at most 16 columns without a costly feature.
diesel::table! {
    #[sql_name = "email_log"]
    email_send (id) {
        id -> Uuid,
        project_id -> Uuid,
        html -> Nullable<Text>,
        text_body -> Nullable<Text>,
        reply_to -> Nullable<Text>,
        headers -> Jsonb,
        tags -> Array<Text>,
        tracking -> Bool,
        idempotency_key -> Nullable<Text>,
        request_hash -> Nullable<Bytea>,
        attempts -> Integer,
        last_error -> Nullable<Text>,
        provider -> Nullable<Text>,
        updated_at -> Timestamptz,
        claimed_at -> Nullable<Timestamptz>,
        answered_queued -> Bool,
    }
}

// The columns of `email_log` that campaign mail added (migration 2026-11-27-000300), a third view
// of the same table.
diesel::table! {
    #[sql_name = "email_log"]
    email_campaign (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        campaign_id -> Nullable<Uuid>,
        enrollment_id -> Nullable<Uuid>,
        step_id -> Nullable<Uuid>,
        hold_reason -> Nullable<Text>,
        held_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    site_send_policies (site_id) {
        site_id -> Uuid,
        project_id -> Uuid,
        timezone -> Text,
        window_start -> Nullable<Time>,
        window_end -> Nullable<Time>,
        window_days -> Array<SmallInt>,
        blackout_dates -> Array<Date>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    site_warmups (site_id) {
        site_id -> Uuid,
        project_id -> Uuid,
        enabled -> Bool,
        daily_limits -> Array<Integer>,
        started_on -> Date,
        paused_on -> Nullable<Date>,
        paused_days -> Integer,
        provider_daily_cap -> Nullable<Integer>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    site_daily_sends (site_id, day) {
        site_id -> Uuid,
        day -> Date,
        sends -> Integer,
    }
}

diesel::table! {
    project_minute_sends (project_id, minute) {
        project_id -> Uuid,
        minute -> Timestamptz,
        sends -> Integer,
    }
}

diesel::table! {
    outbound_events (id) {
        id -> Uuid,
        project_id -> Uuid,
        #[sql_name = "type"]
        kind -> Text,
        data -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    chat_alerts (project_id) {
        project_id -> Uuid,
        url_sealed -> Bytea,
        url_host -> Text,
        after_event -> Uuid,
        last_sent_at -> Nullable<Timestamptz>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_subscriptions (id) {
        id -> Uuid,
        project_id -> Uuid,
        url -> Text,
        events -> Array<Text>,
        description -> Nullable<Text>,
        enabled -> Bool,
        secret_sealed -> Bytea,
        previous_secret_sealed -> Nullable<Bytea>,
        previous_expires_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Uuid,
        project_id -> Uuid,
        subscription_id -> Uuid,
        event_id -> Uuid,
        event_type -> Text,
        status -> Text,
        attempts -> Int4,
        last_status_code -> Nullable<Integer>,
        last_error -> Nullable<Text>,
        published_at -> Nullable<Timestamptz>,
        delivered_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    project_delivery (project_id) {
        project_id -> Uuid,
        provider_config -> Nullable<Bytea>,
        webhook_secret -> Nullable<Bytea>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    email_events (id) {
        id -> Uuid,
        project_id -> Uuid,
        email_log_id -> Uuid,
        kind -> Text,
        source -> Text,
        data -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    outbox (id) {
        id -> Uuid,
        project_id -> Uuid,
        queue -> Text,
        task -> Jsonb,
        created_at -> Timestamptz,
        available_at -> Timestamptz,
        attempts -> Integer,
    }
}

diesel::table! {
    webhook_receipts (id) {
        id -> Uuid,
        provider -> Text,
        webhook_id -> Text,
        project_id -> Nullable<Uuid>,
        event_type -> Nullable<Text>,
        payload -> Jsonb,
        status -> Text,
        email_log_id -> Nullable<Uuid>,
        attempts -> Integer,
        last_error -> Nullable<Text>,
        received_at -> Timestamptz,
        processed_at -> Nullable<Timestamptz>,
        signer_project_id -> Nullable<Uuid>,
    }
}

// `conversions.revenue` is `numeric`; it is read and written through SQL casts to float8 (see
// db/conversions.rs), so it is not declared here.

diesel::table! {
    templates (id) {
        id -> Uuid,
        project_id -> Uuid,
        name -> Text,
        brief -> Text,
        subject_hint -> Nullable<Text>,
        category -> Text,
        tags -> Array<Text>,
        html -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    suppressions (id) {
        id -> Uuid,
        project_id -> Uuid,
        email -> Text,
        reason -> Text,
        note -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    idempotency_keys (project_id, route, key) {
        project_id -> Uuid,
        route -> Text,
        key -> Text,
        request_hash -> Bytea,
        response_status -> Nullable<SmallInt>,
        response_body -> Nullable<Jsonb>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    mcp_confirmations (token_hash) {
        token_hash -> Bytea,
        project_id -> Uuid,
        key_id -> Uuid,
        tool -> Text,
        arguments_hash -> Bytea,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    brand_voices (site_id) {
        site_id -> Uuid,
        project_id -> Uuid,
        tone -> Nullable<Text>,
        audience -> Nullable<Text>,
        guidelines -> Nullable<Text>,
        words_to_avoid -> Array<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    gdpr_deletion_log (id) {
        id -> Uuid,
        project_id -> Uuid,
        contact_id -> Uuid,
        email_sha256 -> Text,
        erased -> Jsonb,
        key_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    cron_runs (id) {
        id -> Uuid,
        job -> Text,
        started_at -> Timestamptz,
        finished_at -> Nullable<Timestamptz>,
        outcome -> Text,
        error -> Nullable<Text>,
        total -> BigInt,
    }
}

diesel::table! {
    team_members (id) {
        id -> Uuid,
        project_id -> Uuid,
        email -> Text,
        role -> Text,
        status -> Text,
        invitation_hash -> Nullable<Bytea>,
        invited_by_key_id -> Nullable<Uuid>,
        invited_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        accepted_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    notifications (id) {
        id -> Uuid,
        project_id -> Uuid,
        kind -> Text,
        title -> Text,
        data -> Jsonb,
        created_at -> Timestamptz,
        read_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    cron_run_counts (run_id, project_id, what) {
        run_id -> Uuid,
        project_id -> Uuid,
        what -> Text,
        count -> BigInt,
    }
}

diesel::table! {
    hygiene_configs (project_id) {
        project_id -> Uuid,
        inactive_days -> Integer,
        remove_bounced -> Bool,
        remove_complained -> Bool,
        suppress_role_addresses -> Bool,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    hygiene_audit (id) {
        id -> Uuid,
        project_id -> Uuid,
        run_id -> Uuid,
        site_id -> Uuid,
        contact_id -> Nullable<Uuid>,
        email -> Text,
        action -> Text,
        reason -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    segments (id) {
        id -> Uuid,
        project_id -> Uuid,
        name -> Text,
        description -> Nullable<Text>,
        rules -> Jsonb,
        origin -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    sending_domains (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        domain -> Text,
        dkim_selector -> Text,
        dkim_public_key -> Text,
        dkim_private_key -> Bytea,
        status -> Text,
        records -> Jsonb,
        verified_at -> Nullable<Timestamptz>,
        checked_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    drafts (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        subject -> Text,
        body_html -> Text,
        text_body -> Nullable<Text>,
        status -> Text,
        reason -> Nullable<Text>,
        decided_at -> Nullable<Timestamptz>,
        campaign_id -> Nullable<Uuid>,
        step_id -> Nullable<Uuid>,
        promoted_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    approval_policies (project_id) {
        project_id -> Uuid,
        applies_to -> Text,
        campaign_launch -> Bool,
        send_recipients_per_day -> Nullable<Integer>,
        enroll_segment_size -> Nullable<Integer>,
        bulk_delete -> Bool,
        expires_after_minutes -> Integer,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    project_language_models (project_id) {
        project_id -> Uuid,
        base_url -> Text,
        model -> Text,
        api_key_sealed -> Nullable<Bytea>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    approvals (id) {
        id -> Uuid,
        project_id -> Uuid,
        action -> Text,
        arguments -> Jsonb,
        arguments_hash -> Bytea,
        summary -> Text,
        requested_by -> Uuid,
        requester -> Text,
        status -> Text,
        reason -> Nullable<Text>,
        decided_by -> Nullable<Uuid>,
        decided_at -> Nullable<Timestamptz>,
        result -> Nullable<Jsonb>,
        expires_at -> Timestamptz,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    ab_tests (id) {
        id -> Uuid,
        project_id -> Uuid,
        campaign_id -> Uuid,
        step_id -> Uuid,
        name -> Text,
        variants -> Jsonb,
        test_share -> Double,
        metric -> Text,
        min_recipients -> Integer,
        confidence -> Double,
        auto_promote -> Bool,
        status -> Text,
        winner -> Nullable<SmallInt>,
        promoted_by -> Nullable<Text>,
        promoted_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

// The rest of `ab_tests` (diesel's tables hold at most 16 columns without a costly feature).
diesel::table! {
    #[sql_name = "ab_tests"]
    ab_test_checks (id) {
        id -> Uuid,
        project_id -> Uuid,
        checked_at -> Nullable<Timestamptz>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    ab_assignments (test_id, enrollment_id) {
        test_id -> Uuid,
        enrollment_id -> Uuid,
        project_id -> Uuid,
        variant -> Nullable<SmallInt>,
    }
}

// The columns of `email_log` that A/B tests added (migration 2026-12-22-000100).
diesel::table! {
    #[sql_name = "email_log"]
    email_ab (id) {
        id -> Uuid,
        project_id -> Uuid,
        ab_variant -> Nullable<SmallInt>,
        from_name -> Nullable<Text>,
    }
}

diesel::joinable!(projects -> accounts (account_id));
diesel::joinable!(api_keys -> projects (project_id));
diesel::joinable!(sites -> projects (project_id));
diesel::joinable!(contacts -> projects (project_id));
diesel::joinable!(contact_sites -> contacts (contact_id));
diesel::joinable!(contact_sites -> sites (site_id));
diesel::joinable!(campaigns -> sites (site_id));
diesel::joinable!(enrollments -> campaigns (campaign_id));
diesel::joinable!(enrollments -> contacts (contact_id));
diesel::joinable!(events -> contacts (contact_id));
diesel::joinable!(campaign_steps -> campaigns (campaign_id));
diesel::table! {
    abuse_monitor (site_id) {
        site_id -> Uuid,
        project_id -> Uuid,
        state -> Text,
        sends -> BigInt,
        bounces -> BigInt,
        complaints -> BigInt,
        checked_at -> Timestamptz,
        changed_at -> Timestamptz,
    }
}

diesel::table! {
    abuse_monitor_overrides (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        reason -> Text,
        created_by -> Uuid,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    scheduler_leases (name) {
        name -> Text,
        last_run_at -> Timestamptz,
    }
}

diesel::table! {
    forms (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        name -> Text,
        fields -> Jsonb,
        tags -> Array<Text>,
        consent_text -> Text,
        views -> BigInt,
        refused_honeypot -> BigInt,
        refused_too_fast -> BigInt,
        refused_rate_limited -> BigInt,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    form_submissions (id) {
        id -> Uuid,
        project_id -> Uuid,
        form_id -> Uuid,
        email -> Text,
        answers -> Jsonb,
        consent_text -> Text,
        consented_at -> Timestamptz,
        confirmed_at -> Nullable<Timestamptz>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    accounts,
    projects,
    api_keys,
    sites,
    project_usage,
    contacts,
    contact_sites,
    campaigns,
    campaign_steps,
    events,
    enrollments,
    email_log,
    templates,
    suppressions,
    idempotency_keys,
    project_delivery,
    email_events,
    outbox,
    webhook_receipts,
    mcp_confirmations,
    brand_voices,
    gdpr_deletion_log,
    team_members,
    notifications,
    hygiene_configs,
    hygiene_audit,
    segments,
    site_send_policies,
    site_warmups,
    sending_domains,
    drafts,
    approval_policies,
    approvals,
    ab_tests,
    ab_test_checks,
    ab_assignments,
    abuse_monitor,
    abuse_monitor_overrides,
    forms,
    form_submissions,
);

diesel::table! {
    scoring_rules (project_id) {
        project_id -> Uuid,
        open_points -> Integer,
        click_points -> Integer,
        conversion_points -> Integer,
        unsubscribe_points -> Integer,
        bounce_points -> Integer,
        complaint_points -> Integer,
        half_life_days -> Integer,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    contact_scores (project_id, contact_id) {
        project_id -> Uuid,
        contact_id -> Uuid,
        score -> Double,
        as_of -> Timestamptz,
        half_life_days -> Integer,
    }
}

diesel::table! {
    platform_connections (id) {
        id -> Uuid,
        project_id -> Uuid,
        platform -> Text,
        account -> Nullable<Text>,
        credentials_sealed -> Bytea,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    platform_imports (id) {
        id -> Uuid,
        project_id -> Uuid,
        connection_id -> Nullable<Uuid>,
        site_id -> Uuid,
        platform -> Text,
        kind -> Text,
        status -> Text,
        counts -> Jsonb,
        errors -> Jsonb,
        cursor -> Jsonb,
        token_sealed -> Nullable<Bytea>,
        error -> Nullable<Text>,
        published_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        finished_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    platform_import_records (project_id, platform, kind, remote_id) {
        project_id -> Uuid,
        platform -> Text,
        kind -> Text,
        remote_id -> Text,
        local_id -> Uuid,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    platform_import_files (import_id) {
        import_id -> Uuid,
        project_id -> Uuid,
        layout -> Text,
        format -> Text,
        mapping -> Nullable<Jsonb>,
        content -> Bytea,
    }
}

diesel::table! {
    commerce_sources (id) {
        id -> Uuid,
        project_id -> Uuid,
        platform -> Text,
        site_id -> Uuid,
        signing_secret_sealed -> Bytea,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    platform_triggers (id) {
        id -> Uuid,
        project_id -> Uuid,
        platform -> Text,
        event_type -> Text,
        action -> Text,
        event_name -> Nullable<Text>,
        tag -> Nullable<Text>,
        campaign_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    platform_events (id) {
        id -> Uuid,
        project_id -> Uuid,
        source_id -> Uuid,
        platform -> Text,
        event_type -> Text,
        event_id -> Text,
        contact_id -> Nullable<Uuid>,
        outcome -> Text,
        actions -> Jsonb,
        error -> Nullable<Text>,
        received_at -> Timestamptz,
    }
}

diesel::table! {
    social_accounts (project_id, platform) {
        project_id -> Uuid,
        platform -> Text,
        handle -> Nullable<Text>,
        access_sealed -> Bytea,
        refresh_sealed -> Nullable<Bytea>,
        expires_at -> Nullable<Timestamptz>,
        connected_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    social_connect_states (state_hash) {
        state_hash -> Bytea,
        project_id -> Uuid,
        platform -> Text,
        code_verifier -> Text,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
        started_by -> Nullable<Uuid>,
    }
}

diesel::table! {
    social_campaigns (id) {
        id -> Uuid,
        project_id -> Uuid,
        name -> Text,
        platform -> Text,
        destination_url -> Text,
        tracked_url -> Text,
        clicks -> BigInt,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    social_posts (id) {
        id -> Uuid,
        project_id -> Uuid,
        title -> Text,
        content -> Text,
        platforms -> Array<Text>,
        campaign_id -> Nullable<Uuid>,
        publisher -> Nullable<Text>,
        publish_at -> Nullable<Timestamptz>,
        approval_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        media -> Jsonb,
        options -> Jsonb,
    }
}

diesel::table! {
    social_publications (id) {
        id -> Uuid,
        project_id -> Uuid,
        post_id -> Uuid,
        platform -> Text,
        status -> Text,
        platform_post_id -> Nullable<Text>,
        attempts -> Integer,
        last_error -> Nullable<Text>,
        claimed_until -> Nullable<Timestamptz>,
        published_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    social_publish_outbox (id) {
        id -> Uuid,
        project_id -> Uuid,
        post_id -> Uuid,
        due_at -> Timestamptz,
        relayed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    sms_providers (project_id) {
        project_id -> Uuid,
        provider -> Text,
        account_sid -> Text,
        auth_token_sealed -> Bytea,
        from_number -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    contact_sms (project_id, contact_id) {
        project_id -> Uuid,
        contact_id -> Uuid,
        phone -> Text,
        consent -> Text,
        consent_source -> Text,
        timezone -> Nullable<Text>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    sms_campaigns (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        name -> Text,
        body -> Text,
        recipients -> Integer,
        skipped_no_consent -> Integer,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    sms_messages (id) {
        id -> Uuid,
        project_id -> Uuid,
        contact_id -> Nullable<Uuid>,
        campaign_id -> Nullable<Uuid>,
        to_phone -> Text,
        body -> Text,
        status -> Text,
        reason -> Nullable<Text>,
        send_after -> Timestamptz,
        published_at -> Nullable<Timestamptz>,
        attempt_started_at -> Nullable<Timestamptz>,
        lease_until -> Nullable<Timestamptz>,
        provider_sid -> Nullable<Text>,
        idempotency_key -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    sms_inbound (id) {
        id -> Uuid,
        project_id -> Uuid,
        message_sid -> Text,
        from_phone -> Text,
        to_phone -> Text,
        body -> Text,
        keyword -> Nullable<Text>,
        received_at -> Timestamptz,
    }
}
diesel::allow_tables_to_appear_in_same_query!(contact_sites, contact_sms);

diesel::table! {
    content_blocks (id) {
        id -> Uuid,
        project_id -> Uuid,
        name -> Text,
        html -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    content_sources (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        url -> Text,
        created_at -> Timestamptz,
        last_fetched_at -> Nullable<Timestamptz>,
        last_error -> Nullable<Text>,
    }
}

diesel::table! {
    content_seen_items (source_id, item_id) {
        project_id -> Uuid,
        source_id -> Uuid,
        item_id -> Text,
        seen_at -> Timestamptz,
    }
}

diesel::table! {
    automations (id) {
        id -> Uuid,
        project_id -> Uuid,
        site_id -> Uuid,
        name -> Text,
        status -> Text,
        trigger -> Jsonb,
        steps -> Jsonb,
        webhook_secret_sealed -> Bytea,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    automation_enrollments (id) {
        id -> Uuid,
        project_id -> Uuid,
        automation_id -> Uuid,
        contact_id -> Uuid,
        occurrence -> Text,
        step_index -> Integer,
        status -> Text,
        next_run_at -> Nullable<Timestamptz>,
        last_email_id -> Nullable<Uuid>,
        exit_reason -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    automation_step_runs (enrollment_id, step_index) {
        enrollment_id -> Uuid,
        step_index -> Integer,
        project_id -> Uuid,
        outcome -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    automation_webhook_calls (id) {
        id -> Uuid,
        project_id -> Uuid,
        automation_id -> Uuid,
        enrollment_id -> Uuid,
        step_index -> Integer,
        url -> Text,
        body -> Jsonb,
        status -> Text,
        attempts -> Integer,
        next_attempt_at -> Timestamptz,
        last_status -> Nullable<Integer>,
        created_at -> Timestamptz,
    }
}
