// The tables of migrations/memory, as diesel sees them.

diesel::table! {
    users (id) {
        id -> Uuid,
        email -> Text,
        tier -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        user_id -> Uuid,
        name -> Text,
        kind -> Text,
        environment -> Text,
        origin -> Text,
        scopes -> Array<Text>,
        key_hash -> Bytea,
        key_prefix -> Text,
        created_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
        created_by -> Nullable<Uuid>,
    }
}

diesel::table! {
    products (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        name -> Text,
        description -> Nullable<Text>,
        status -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        signing_secret -> Nullable<Bytea>,
        signing_secret_rotated_at -> Nullable<Timestamptz>,
        previous_signing_secret -> Nullable<Bytea>,
    }
}

diesel::joinable!(api_keys -> users (user_id));
diesel::joinable!(products -> users (user_id));

diesel::table! {
    identity_kernels (user_id, environment) {
        user_id -> Uuid,
        environment -> Text,
        kernel -> Jsonb,
        injection_block -> Nullable<Text>,
        token_count -> Integer,
        version -> Integer,
        updated_at -> Timestamptz,
    }
}

diesel::joinable!(identity_kernels -> users (user_id));

diesel::table! {
    product_states (id) {
        id -> Uuid,
        product_id -> Uuid,
        version -> Integer,
        state -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    feed_items (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        #[sql_name = "type"]
        kind -> Text,
        product_name -> Nullable<Text>,
        summary -> Text,
        severity -> Text,
        created_at -> Timestamptz,
        workspace_id -> Nullable<Uuid>,
        evidence -> Nullable<Jsonb>,
    }
}

// decisions also has `embedding vector(n)` (n: the model's dimension), `embedding_previous
// vector` (the previous model's, while rows are re-embedded) and the generated `search
// tsvector`, which the keyword and semantic searches read with SQL of their own.
diesel::table! {
    decisions (user_id, environment, id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        decision -> Text,
        reasoning -> Nullable<Text>,
        product_name -> Text,
        affects_products -> Array<Text>,
        tags -> Array<Text>,
        decided_at -> Timestamptz,
        workspace_id -> Nullable<Uuid>,
    }
}

diesel::joinable!(product_states -> products (product_id));
diesel::allow_tables_to_appear_in_same_query!(
    users,
    api_keys,
    products,
    identity_kernels,
    product_states,
    feed_items,
    decisions
);

// free_form_entries also has `embedding vector(n)`, `embedding_previous vector` and the
// generated `search tsvector`.
diesel::table! {
    free_form_entries (user_id, environment, id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        content -> Text,
        tags -> Array<Text>,
        source -> Nullable<Text>,
        metadata -> Jsonb,
        created_at -> Timestamptz,
        workspace_id -> Nullable<Uuid>,
    }
}

diesel::table! {
    mif_imports (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        merge_strategy -> Text,
        document -> Jsonb,
        workspace_id -> Nullable<Uuid>,
        status -> Text,
        created_at -> Timestamptz,
        applied_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    consolidation_runs (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        workspace_id -> Nullable<Uuid>,
        status -> Text,
        compute_budget_tokens -> Integer,
        tokens_read -> Integer,
        items_read -> Integer,
        corpus_deduplicated -> Integer,
        stale_decisions_flagged -> Integer,
        redundancy_score -> Double,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    consolidation_candidates (run_id, position) {
        run_id -> Uuid,
        position -> Integer,
        kind -> Text,
        rule -> Text,
        item_type -> Text,
        item_id -> Uuid,
        other_type -> Nullable<Text>,
        other_id -> Nullable<Uuid>,
        similarity -> Nullable<Double>,
    }
}

diesel::joinable!(consolidation_candidates -> consolidation_runs (run_id));
diesel::allow_tables_to_appear_in_same_query!(consolidation_runs, consolidation_candidates);

diesel::table! {
    events (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        event_type -> Text,
        severity -> Text,
        external_id -> Nullable<Text>,
        idempotency_key -> Nullable<Text>,
        occurred_at -> Timestamptz,
        worker_type -> Nullable<Text>,
        payload -> Jsonb,
        received_at -> Timestamptz,
    }
}

diesel::table! {
    ai_cost_events (event_id) {
        event_id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        product -> Text,
        model -> Text,
        input_tokens -> BigInt,
        output_tokens -> BigInt,
        cost_usd -> Numeric,
        occurred_at -> Timestamptz,
    }
}

diesel::table! {
    datasets (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        name -> Text,
        column_types -> Jsonb,
        row_count -> BigInt,
        owning_worker_type -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    dataset_rows (id) {
        id -> Uuid,
        dataset_id -> Uuid,
        row_key -> Nullable<Text>,
        data -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    dataset_ingest_keys (dataset_id, idempotency_key) {
        dataset_id -> Uuid,
        idempotency_key -> Text,
        inserted -> Integer,
        updated -> Integer,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    dataset_uploads (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        dataset_name -> Text,
        format -> Text,
        content -> Bytea,
        row_count -> Integer,
        column_types -> Jsonb,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        confirmed_at -> Nullable<Timestamptz>,
        dataset_id -> Nullable<Uuid>,
        inserted -> Nullable<Integer>,
        updated -> Nullable<Integer>,
    }
}

diesel::joinable!(dataset_rows -> datasets (dataset_id));
diesel::joinable!(dataset_ingest_keys -> datasets (dataset_id));
diesel::allow_tables_to_appear_in_same_query!(datasets, dataset_rows, dataset_ingest_keys);

diesel::table! {
    project_signals (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        product_id -> Uuid,
        event_type -> Text,
        title -> Text,
        severity -> Text,
        body -> Nullable<Jsonb>,
        external_id -> Nullable<Text>,
        received_via -> Text,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(project_signals -> products (product_id));
diesel::allow_tables_to_appear_in_same_query!(project_signals, products);

diesel::table! {
    connector_intakes (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        key_id -> Nullable<Uuid>,
        ai_vendor -> Text,
        workspace_id -> Nullable<Uuid>,
        requested_capability -> Nullable<Text>,
        raw_content -> Text,
        outcome -> Text,
        idempotency_key -> Nullable<Text>,
        created_at -> Timestamptz,
        run_id -> Nullable<Uuid>,
    }
}

diesel::table! {
    proposals (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        intake_id -> Uuid,
        status -> Text,
        decided_at -> Nullable<Timestamptz>,
        decided_by -> Nullable<Uuid>,
        memory_entry_ids -> Array<Uuid>,
        created_at -> Timestamptz,
        run_id -> Nullable<Uuid>,
        action_index -> Nullable<Integer>,
        channel -> Nullable<Text>,
        rationale -> Nullable<Text>,
        priority -> Nullable<Integer>,
        decision_id -> Nullable<Uuid>,
        hook_id -> Nullable<Uuid>,
    }
}

diesel::table! {
    action_hooks (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        proposal_id -> Uuid,
        payload -> Jsonb,
        status -> Text,
        published -> Bool,
        answer_status -> Nullable<Integer>,
        error -> Nullable<Text>,
        created_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        completed_at -> Nullable<Timestamptz>,
    }
}

diesel::joinable!(proposals -> connector_intakes (intake_id));
diesel::allow_tables_to_appear_in_same_query!(proposals, connector_intakes);

diesel::table! {
    leads (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        intake_id -> Uuid,
        status -> Text,
        decided_at -> Nullable<Timestamptz>,
        decided_by -> Nullable<Uuid>,
        signal_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(leads -> connector_intakes (intake_id));
diesel::allow_tables_to_appear_in_same_query!(leads, connector_intakes);

diesel::table! {
    inbox_draft_threads (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        account_email -> Text,
        thread_id -> Text,
        latest_message_id -> Text,
        latest_message_at -> Timestamptz,
        generated_at -> Timestamptz,
        why -> Text,
        drafts -> Jsonb,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    byok_credentials (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        service -> Text,
        label -> Text,
        sealed_key -> Bytea,
        key_hint -> Text,
        created_at -> Timestamptz,
        last_used_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    workspaces (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        name -> Text,
        description -> Nullable<Text>,
        location -> Nullable<Text>,
        created_at -> Timestamptz,
        last_ingested_at -> Nullable<Timestamptz>,
        last_synced_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    workspace_scopes (key_id) {
        key_id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        active_workspace_id -> Nullable<Uuid>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    workspace_files (workspace_id, path) {
        workspace_id -> Uuid,
        path -> Text,
        content -> Nullable<Text>,
        sha256 -> Nullable<Text>,
        ingested_at -> Nullable<Timestamptz>,
        synced_content -> Nullable<Text>,
        synced_sha256 -> Nullable<Text>,
        synced_at -> Nullable<Timestamptz>,
        acknowledged_sha256 -> Nullable<Text>,
    }
}

diesel::table! {
    workspace_drift (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        workspace_id -> Uuid,
        path -> Text,
        kind -> Text,
        expected_sha256 -> Text,
        actual_sha256 -> Nullable<Text>,
        actual_content -> Nullable<Text>,
        detected_at -> Timestamptz,
        status -> Text,
        resolution -> Nullable<Text>,
        note -> Nullable<Text>,
        free_form_entry_ids -> Array<Uuid>,
        resolved_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    workspace_sync_log (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        workspace_id -> Uuid,
        direction -> Text,
        paths -> Array<Text>,
        drift_opened -> Integer,
        drift_closed -> Integer,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(workspace_files -> workspaces (workspace_id));
diesel::joinable!(workspace_drift -> workspaces (workspace_id));
diesel::joinable!(workspace_sync_log -> workspaces (workspace_id));
diesel::allow_tables_to_appear_in_same_query!(
    workspaces,
    workspace_scopes,
    workspace_files,
    workspace_drift,
    workspace_sync_log
);

diesel::table! {
    bridge_runs (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        workspace_id -> Nullable<Uuid>,
        file_name -> Text,
        budget_tokens -> Integer,
        decisions_limit -> Integer,
        status -> Text,
        published -> Bool,
        content -> Nullable<Text>,
        token_count -> Nullable<Integer>,
        summary -> Nullable<Jsonb>,
        error -> Nullable<Text>,
        created_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        completed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    agents (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        name -> Text,
        kind -> Text,
        context_file -> Text,
        workspace_id -> Nullable<Uuid>,
        key_id -> Nullable<Uuid>,
        connected_at -> Timestamptz,
    }
}

diesel::table! {
    render_jobs (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        workspace_id -> Nullable<Uuid>,
        kind -> Text,
        format -> Text,
        input -> Jsonb,
        status -> Text,
        published -> Bool,
        object_key -> Nullable<Text>,
        result -> Nullable<Jsonb>,
        error -> Nullable<Text>,
        created_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        completed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    model_runs (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        workspace_id -> Nullable<Uuid>,
        kind -> Text,
        input -> Jsonb,
        status -> Text,
        published -> Bool,
        model -> Nullable<Text>,
        result -> Nullable<Jsonb>,
        error -> Nullable<Text>,
        created_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        completed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    render_video_jobs (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        workspace_id -> Nullable<Uuid>,
        brief -> Text,
        format -> Text,
        duration -> Int4,
        run_id -> Nullable<Uuid>,
        input -> Jsonb,
        status -> Text,
        published -> Bool,
        result -> Nullable<Jsonb>,
        error -> Nullable<Text>,
        created_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        completed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    render_video_scenes (user_id, environment, run_id, scene_hash) {
        user_id -> Uuid,
        environment -> Text,
        run_id -> Uuid,
        scene_hash -> Text,
        object_key -> Text,
        seconds -> Int4,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    signal_signatures (product_id, signature) {
        product_id -> Uuid,
        signature -> Bytea,
        signal_id -> Uuid,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    competitor_snapshots (user_id, environment, url) {
        user_id -> Uuid,
        environment -> Text,
        url -> Text,
        competitor -> Text,
        content -> Text,
        sha256 -> Text,
        fetched_at -> Timestamptz,
    }
}

diesel::table! {
    competitor_watches (id) {
        id -> Uuid,
        user_id -> Uuid,
        environment -> Text,
        workspace_id -> Nullable<Uuid>,
        name -> Nullable<Text>,
        definition -> Jsonb,
        interval_minutes -> Int4,
        paused -> Bool,
        next_run_at -> Timestamptz,
        lease_until -> Nullable<Timestamptz>,
        last_run_at -> Nullable<Timestamptz>,
        last_run_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}
