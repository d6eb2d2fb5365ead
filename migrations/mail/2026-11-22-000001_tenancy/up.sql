-- Accounts own projects; a project owns its keys, sites and everything below them.

CREATE TABLE accounts (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
    id          uuid PRIMARY KEY,
    account_id  uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        text NOT NULL,
    plan        text NOT NULL CHECK (plan IN ('free', 'byod', 'managed', 'agency_plus', 'enterprise')),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX projects_account_idx ON projects (account_id);

-- Keys are stored only as SHA-256 hashes of the plaintext. NULL tool_groups: every group.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name         text NOT NULL,
    scope        text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    tool_groups  text[],
    key_hash     bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    key_prefix   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);

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

-- A plan change alters every key of the project: flush every cache ('*').
CREATE FUNCTION notify_all_credentials() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('credential_changed', '*');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER projects_plan_changed
    AFTER UPDATE OF plan ON projects
    FOR EACH STATEMENT EXECUTE FUNCTION notify_all_credentials();

-- Sender identities of a project.
CREATE TABLE sites (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name        text NOT NULL,
    slug        text NOT NULL,
    from_name   text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, slug)
);
CREATE INDEX sites_project_id_idx ON sites (project_id, id);
