-- Model runs: a content brief (`POST /content/brief`), an autonomous marketing cycle
-- (`POST /marketing/autonomous/run`) or a competitor watch (`POST /marketing/competitor-watch/run`).
-- A run is recorded here with its request, then queued on RabbitMQ (`model.run`); the worker
-- asks the OpenAI-compatible endpoint with the owner's BYOK credential and records the answer
-- (`result`) or why there is none (`error`). `published` says the broker confirmed the task;
-- the relay publishes again the runs whose publish was lost.
CREATE TABLE model_runs (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment   text NOT NULL CHECK (environment IN ('live', 'test')),
    workspace_id  uuid,
    kind          text NOT NULL
                  CHECK (kind IN ('content_brief', 'autonomous_marketing', 'competitor_watch')),
    input         jsonb NOT NULL CHECK (jsonb_typeof(input) = 'object'),
    status        text NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    published     boolean NOT NULL DEFAULT false,
    model         text,
    result        jsonb CHECK (result IS NULL OR jsonb_typeof(result) = 'object'),
    error         text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    completed_at  timestamptz,
    CHECK ((status = 'completed') = (result IS NOT NULL)),
    FOREIGN KEY (user_id, environment, workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE
);
CREATE INDEX model_runs_owner_idx ON model_runs (user_id, environment, kind, id);
CREATE INDEX model_runs_unpublished_idx ON model_runs (created_at)
    WHERE status = 'queued' AND NOT published;
