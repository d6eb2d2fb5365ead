-- Migrations from other email platforms: one row per run (`platform.migrate` queue job),
-- published through the outbox (`published_at` null until the broker confirmed the job).
CREATE TABLE platform_imports (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    -- The connection it reads (null for a run given an OAuth token); no foreign key: the
    -- history outlives a disconnection.
    connection_id   uuid,
    site_id         uuid NOT NULL,
    platform        text NOT NULL
        CHECK (platform IN ('mailchimp', 'brevo', 'kit', 'mailerlite')),
    -- `full`: everything; `campaigns`: templates and campaigns only (migrate_campaigns_from).
    kind            text NOT NULL CHECK (kind IN ('full', 'campaigns')),
    status          text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    -- Per kind of record: {"contacts": {"imported": n, "updated": n, "skipped": n, "failed": n}, ...}
    counts          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(counts) = 'object'),
    -- A bounded list of per-record errors.
    errors          jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(errors) = 'array'),
    -- Where a redelivered job resumes (the stage and the page, saved with each page's writes)
    -- and the transient failures so far (the run fails past a bound).
    cursor          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(cursor) = 'object'),
    -- An OAuth access token (migrate_campaigns_from), sealed; deleted when the run ends.
    token_sealed    bytea,
    error           text,
    published_at    timestamptz,
    created_at      timestamptz NOT NULL,
    started_at      timestamptz,
    finished_at     timestamptz,
    UNIQUE (project_id, id),
    FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);
CREATE INDEX platform_imports_project_idx ON platform_imports (project_id, id);
CREATE INDEX platform_imports_unpublished_idx ON platform_imports (created_at)
    WHERE published_at IS NULL;

-- What each imported template or campaign was on its platform: the key that makes a second
-- run create nothing twice, and the record's attribution.
CREATE TABLE platform_import_records (
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    platform    text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('template', 'campaign')),
    remote_id   text NOT NULL,
    local_id    uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, platform, kind, remote_id)
);
