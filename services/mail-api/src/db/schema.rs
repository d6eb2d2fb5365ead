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
    }
}

diesel::joinable!(projects -> accounts (account_id));
diesel::joinable!(api_keys -> projects (project_id));
diesel::joinable!(sites -> projects (project_id));
diesel::allow_tables_to_appear_in_same_query!(accounts, projects, api_keys, sites);
