-- Users, their API keys and their products: what every memory route is scoped by.

CREATE TABLE users (
    id          uuid PRIMARY KEY,
    email       text NOT NULL UNIQUE,
    tier        text NOT NULL CHECK (tier IN ('free', 'pro', 'team')),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Credentials are stored only as SHA-256 hashes of the plaintext.
CREATE TABLE api_keys (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name          text NOT NULL,
    kind          text NOT NULL DEFAULT 'api_key' CHECK (kind IN ('api_key', 'oauth')),
    environment   text NOT NULL CHECK (environment IN ('live', 'test')),
    origin        text NOT NULL DEFAULT 'first_party' CHECK (origin IN ('first_party', 'connector')),
    scopes        text[] NOT NULL,
    key_hash      bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    key_prefix    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_keys_user_idx ON api_keys (user_id);

-- Every replica caches credentials; this tells them all at once that one changed.
CREATE FUNCTION notify_credential_change() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('credential_changed', encode(OLD.key_hash, 'hex'));
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER api_keys_changed
    AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION notify_credential_change();

-- A tier change alters what every key of the user may do: flush every cache ('*').
CREATE FUNCTION notify_all_credentials() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('credential_changed', '*');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER users_tier_changed
    AFTER UPDATE OF tier ON users
    FOR EACH STATEMENT EXECUTE FUNCTION notify_all_credentials();

-- Named products of a user, in one environment (live or test data never mix).
CREATE TABLE products (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment  text NOT NULL CHECK (environment IN ('live', 'test')),
    name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    description  text,
    status       text NOT NULL DEFAULT 'active',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, environment, name)
);
