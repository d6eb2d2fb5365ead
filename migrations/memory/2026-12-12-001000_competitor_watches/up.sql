-- Stored competitor watches, run on a schedule. Every `interval_minutes`, the scheduler of
-- some memory-api replica claims a due watch (`FOR UPDATE SKIP LOCKED`), takes its lease and
-- advances `next_run_at`, and records a competitor-watch model run of its definition, all in
-- one transaction: any number of replicas start each due watch once.
CREATE TABLE competitor_watches (
    id                uuid PRIMARY KEY,
    user_id           uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment       text NOT NULL CHECK (environment IN ('live', 'test')),
    -- The workspace whose memory each run is given (null: the whole account).
    workspace_id      uuid,
    name              text,
    -- What each run is asked: `{competitors, focus}`, as `POST /marketing/competitor-watch/run`
    -- takes it (without `workspace_id`).
    definition        jsonb NOT NULL CHECK (jsonb_typeof(definition) = 'object'),
    interval_minutes  integer NOT NULL CHECK (interval_minutes BETWEEN 60 AND 10080),
    paused            boolean NOT NULL DEFAULT false,
    next_run_at       timestamptz NOT NULL DEFAULT now(),
    -- Until when the scheduler that last started the watch holds it: no other start of it
    -- before then, whatever `next_run_at` says.
    lease_until       timestamptz,
    last_run_at       timestamptz,
    -- Finished runs are purged after 30 days: the reference goes with them.
    last_run_id       uuid REFERENCES model_runs (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (user_id, environment, workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE
);
CREATE INDEX competitor_watches_owner_idx ON competitor_watches (user_id, environment, id);
-- The scheduler's claim.
CREATE INDEX competitor_watches_due_idx ON competitor_watches (next_run_at) WHERE NOT paused;
-- Purging a run clears the reference.
CREATE INDEX competitor_watches_last_run_idx ON competitor_watches (last_run_id)
    WHERE last_run_id IS NOT NULL;
