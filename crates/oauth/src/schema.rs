//! The OAuth tables, the same in both services' databases (each service's migration creates
//! them, with its own owner foreign key).

diesel::table! {
    oauth_accounts (id) {
        id -> Uuid,
        email -> Text,
        password_hash -> Text,
        owner_id -> Uuid,
        disabled_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    oauth_clients (id) {
        id -> Uuid,
        client_name -> Text,
        redirect_uris -> Array<Text>,
        secret_hash -> Nullable<Bytea>,
        token_endpoint_auth_method -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    oauth_sessions (token_hash) {
        token_hash -> Bytea,
        account_id -> Uuid,
        expires_at -> Timestamptz,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    oauth_grants (id) {
        id -> Uuid,
        client_id -> Uuid,
        account_id -> Uuid,
        owner_id -> Uuid,
        scopes -> Array<Text>,
        resource -> Text,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    oauth_codes (code_hash) {
        code_hash -> Bytea,
        grant_id -> Uuid,
        redirect_uri -> Text,
        code_challenge -> Text,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    oauth_tokens (id) {
        id -> Uuid,
        grant_id -> Uuid,
        kind -> Text,
        key_hash -> Bytea,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(oauth_sessions -> oauth_accounts (account_id));
diesel::joinable!(oauth_grants -> oauth_clients (client_id));
diesel::joinable!(oauth_grants -> oauth_accounts (account_id));
diesel::joinable!(oauth_codes -> oauth_grants (grant_id));
diesel::joinable!(oauth_tokens -> oauth_grants (grant_id));

diesel::allow_tables_to_appear_in_same_query!(
    oauth_accounts,
    oauth_clients,
    oauth_sessions,
    oauth_grants,
    oauth_codes,
    oauth_tokens,
);
