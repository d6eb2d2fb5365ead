-- Credentials supplied by the user (BYOK), one per service of an owner. The key is sealed
-- (AES-256-GCM under the key-encryption key, bound to the row's id); only its hint is shown.
CREATE TABLE byok_credentials (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment   text NOT NULL CHECK (environment IN ('live', 'test')),
    service       text NOT NULL CHECK (service ~ '^[a-z0-9][a-z0-9._-]{0,49}$'),
    label         text NOT NULL CHECK (char_length(label) BETWEEN 1 AND 100),
    sealed_key    bytea NOT NULL,
    key_hint      text NOT NULL CHECK (char_length(key_hint) <= 8),
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    UNIQUE (user_id, environment, service)
);
CREATE INDEX byok_credentials_owner_idx ON byok_credentials (user_id, environment, id);
