-- Accounts of other email platforms a project connected to migrate from: the platform, the
-- account it answered for, and the credential sealed under the key-encryption key (bound to
-- the project and the connection), never answered.
CREATE TABLE platform_connections (
    id                  uuid PRIMARY KEY,
    project_id          uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    platform            text NOT NULL
        CHECK (platform IN ('mailchimp', 'brevo', 'kit', 'mailerlite')),
    -- The account's name or id as the platform gave it when the credential was checked.
    account             text,
    credentials_sealed  bytea NOT NULL,
    created_at          timestamptz NOT NULL,
    UNIQUE (project_id, id)
);
CREATE INDEX platform_connections_project_idx ON platform_connections (project_id, id);
