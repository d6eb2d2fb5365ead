-- A project's own chat-completions endpoint for the model-backed tools, instead of the
-- deployment's. The key is sealed (AES-256-GCM under the key-encryption key, bound to the
-- project); null: the endpoint takes no key.
CREATE TABLE project_language_models (
    project_id      uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    base_url        text NOT NULL,
    model           text NOT NULL,
    api_key_sealed  bytea,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
