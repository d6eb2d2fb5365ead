-- The OAuth authorization server (crates/oauth): sign-in accounts (one user each), clients
-- registered dynamically (RFC 7591), browser sessions, grants with their single-use codes, and
-- the access and refresh tokens issued under them. Every secret is stored as its SHA-256 only.

CREATE TABLE oauth_accounts (
    id             uuid PRIMARY KEY,
    email          text NOT NULL UNIQUE CHECK (email = lower(email)),
    password_hash  text NOT NULL,
    owner_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    disabled_at    timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_accounts_owner_idx ON oauth_accounts (owner_id);

CREATE TABLE oauth_clients (
    id                          uuid PRIMARY KEY,
    client_name                 text NOT NULL,
    redirect_uris               text[] NOT NULL,
    secret_hash                 bytea CHECK (octet_length(secret_hash) = 32),
    token_endpoint_auth_method  text NOT NULL
        CHECK (token_endpoint_auth_method IN ('none', 'client_secret_post', 'client_secret_basic')),
    created_at                  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_sessions (
    token_hash  bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    account_id  uuid NOT NULL REFERENCES oauth_accounts (id) ON DELETE CASCADE,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_sessions_account_idx ON oauth_sessions (account_id);

CREATE TABLE oauth_grants (
    id          uuid PRIMARY KEY,
    client_id   uuid NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    account_id  uuid NOT NULL REFERENCES oauth_accounts (id) ON DELETE CASCADE,
    owner_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scopes      text[] NOT NULL,
    resource    text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX oauth_grants_client_idx ON oauth_grants (client_id);
CREATE INDEX oauth_grants_account_idx ON oauth_grants (account_id);
CREATE INDEX oauth_grants_owner_idx ON oauth_grants (owner_id);

CREATE TABLE oauth_codes (
    code_hash       bytea PRIMARY KEY CHECK (octet_length(code_hash) = 32),
    grant_id        uuid NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    redirect_uri    text NOT NULL,
    code_challenge  text NOT NULL,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz
);
CREATE INDEX oauth_codes_grant_idx ON oauth_codes (grant_id);

CREATE TABLE oauth_tokens (
    id          uuid PRIMARY KEY,
    grant_id    uuid NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('access', 'refresh')),
    key_hash    bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    revoked_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id);

-- Access tokens are bearer credentials: every replica's credential cache hears of a token
-- issued, revoked or deleted on the same channel as the API keys.
CREATE TRIGGER oauth_tokens_inserted
    AFTER INSERT ON oauth_tokens
    FOR EACH ROW EXECUTE FUNCTION notify_credential_insert();
CREATE TRIGGER oauth_tokens_changed
    AFTER UPDATE OR DELETE ON oauth_tokens
    FOR EACH ROW EXECUTE FUNCTION notify_credential_change();
