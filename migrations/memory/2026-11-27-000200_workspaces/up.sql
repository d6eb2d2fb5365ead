-- Workspaces: the places (a repository, a project folder) where a user's agents work. Memory
-- written while a workspace is active belongs to it; memory written with no active workspace
-- is account-wide. Tenancy is in the schema: rows name their workspace through a composite
-- (user_id, environment, workspace_id) key, so no row can point at another owner's workspace.
CREATE TABLE workspaces (
    id                uuid PRIMARY KEY,
    user_id           uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment       text NOT NULL CHECK (environment IN ('live', 'test')),
    name              text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    description       text CHECK (char_length(description) <= 2000),
    location          text CHECK (char_length(location) BETWEEN 1 AND 500),
    created_at        timestamptz NOT NULL DEFAULT now(),
    last_ingested_at  timestamptz,
    last_synced_at    timestamptz,
    UNIQUE (user_id, environment, name),
    UNIQUE (user_id, environment, id)
);

-- The active workspace of each credential (none: memory is read and written account-wide).
-- It belongs to the credential, not the user, so agents working in different workspaces at
-- once do not move each other's scope. Deleting the workspace clears it.
CREATE TABLE workspace_scopes (
    key_id               uuid PRIMARY KEY REFERENCES api_keys (id) ON DELETE CASCADE,
    user_id              uuid NOT NULL,
    environment          text NOT NULL CHECK (environment IN ('live', 'test')),
    active_workspace_id  uuid,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (user_id, environment, active_workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE SET NULL (active_workspace_id)
);

-- Decisions, free-form entries and decision feed items of a workspace go with it.
ALTER TABLE decisions ADD COLUMN workspace_id uuid;
ALTER TABLE decisions ADD CONSTRAINT decisions_workspace_fkey
    FOREIGN KEY (user_id, environment, workspace_id)
    REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE;
CREATE INDEX decisions_workspace_idx ON decisions (user_id, environment, workspace_id)
    WHERE workspace_id IS NOT NULL;

ALTER TABLE free_form_entries ADD COLUMN workspace_id uuid;
ALTER TABLE free_form_entries ADD CONSTRAINT free_form_entries_workspace_fkey
    FOREIGN KEY (user_id, environment, workspace_id)
    REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE;
CREATE INDEX free_form_entries_workspace_idx ON free_form_entries (user_id, environment, workspace_id)
    WHERE workspace_id IS NOT NULL;

ALTER TABLE feed_items ADD COLUMN workspace_id uuid;
ALTER TABLE feed_items ADD CONSTRAINT feed_items_workspace_fkey
    FOREIGN KEY (user_id, environment, workspace_id)
    REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE;
CREATE INDEX feed_items_workspace_idx ON feed_items (user_id, environment, workspace_id)
    WHERE workspace_id IS NOT NULL;

-- Staged imports and consolidation runs recorded a workspace id before workspaces could be
-- registered: none of those ids names a workspace, so they are cleared; from now on they
-- name a registered workspace of the owner, and go with it.
UPDATE mif_imports SET workspace_id = NULL WHERE workspace_id IS NOT NULL;
ALTER TABLE mif_imports ADD CONSTRAINT mif_imports_workspace_fkey
    FOREIGN KEY (user_id, environment, workspace_id)
    REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE;
UPDATE consolidation_runs SET workspace_id = NULL WHERE workspace_id IS NOT NULL;
ALTER TABLE consolidation_runs ADD CONSTRAINT consolidation_runs_workspace_fkey
    FOREIGN KEY (user_id, environment, workspace_id)
    REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE;

-- The files of a workspace: what its latest snapshot held at each path, and what the last
-- sync wrote there. A snapshot whose copy differs from what was synced is drift.
CREATE TABLE workspace_files (
    workspace_id      uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    path              text NOT NULL CHECK (char_length(path) BETWEEN 1 AND 255),
    -- The latest snapshot's copy (NULL: no snapshot held this path).
    content           text,
    sha256            text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    ingested_at       timestamptz,
    -- What the latest sync wrote (NULL: never synced).
    synced_content    text,
    synced_sha256     text CHECK (synced_sha256 ~ '^[0-9a-f]{64}$'),
    synced_at         timestamptz,
    -- A copy whose drift was resolved: the same copy in a later snapshot is not drift again
    -- (until a sync writes the file anew).
    acknowledged_sha256 text CHECK (acknowledged_sha256 ~ '^[0-9a-f]{64}$'),
    PRIMARY KEY (workspace_id, path)
);

-- A workspace copy that differs from what the service synced (`modified`) or that a snapshot
-- no longer holds (`missing`). At most one open event per file: a later snapshot updates it,
-- and one that matches the synced copy again closes it.
CREATE TABLE workspace_drift (
    id                 uuid PRIMARY KEY,
    user_id            uuid NOT NULL,
    environment        text NOT NULL,
    workspace_id       uuid NOT NULL,
    path               text NOT NULL CHECK (char_length(path) BETWEEN 1 AND 255),
    kind               text NOT NULL CHECK (kind IN ('modified', 'missing')),
    expected_sha256    text NOT NULL CHECK (expected_sha256 ~ '^[0-9a-f]{64}$'),
    actual_sha256      text CHECK (actual_sha256 ~ '^[0-9a-f]{64}$'),
    actual_content     text,
    detected_at        timestamptz NOT NULL DEFAULT now(),
    status             text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    resolution         text CHECK (resolution IN ('accept', 'discard', 'reconciled', 'overwritten')),
    note               text CHECK (char_length(note) <= 2000),
    -- `accept`: the free-form entries that keep the lines the workspace added.
    free_form_entry_ids uuid[] NOT NULL DEFAULT '{}',
    resolved_at        timestamptz,
    CHECK ((status = 'open') = (resolution IS NULL)),
    FOREIGN KEY (user_id, environment, workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX workspace_drift_open_key ON workspace_drift (workspace_id, path) WHERE status = 'open';
CREATE INDEX workspace_drift_owner_idx ON workspace_drift (user_id, environment, id);

-- Every snapshot ingest and every sync of a workspace.
CREATE TABLE workspace_sync_log (
    id             uuid PRIMARY KEY,
    user_id        uuid NOT NULL,
    environment    text NOT NULL,
    workspace_id   uuid NOT NULL,
    direction      text NOT NULL CHECK (direction IN ('ingest', 'sync')),
    paths          text[] NOT NULL,
    drift_opened   integer NOT NULL DEFAULT 0 CHECK (drift_opened >= 0),
    drift_closed   integer NOT NULL DEFAULT 0 CHECK (drift_closed >= 0),
    created_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (user_id, environment, workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE
);
CREATE INDEX workspace_sync_log_owner_idx ON workspace_sync_log (user_id, environment, id);
