-- Render jobs: a producible document (`POST /render/producibles/jobs`) or a video. A job is
-- recorded here with its request (`input`: a producible's `ir`, `output_id` and
-- `worker_run_id`), then queued on RabbitMQ (`render.job`); the render worker
-- marks it running, writes the file into the object store under `object_key` and marks it
-- completed, or records why it failed (`error`). `published` says the broker confirmed the
-- task; the relay publishes again the jobs whose publish was lost. `result` holds what a kind
-- reports beyond its file (e.g. a video's cost).
CREATE TABLE render_jobs (
    id             uuid PRIMARY KEY,
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment    text NOT NULL CHECK (environment IN ('live', 'test')),
    workspace_id   uuid,
    kind           text NOT NULL CHECK (kind IN ('producible', 'video')),
    format         text NOT NULL CHECK (char_length(format) BETWEEN 1 AND 40),
    input          jsonb NOT NULL CHECK (jsonb_typeof(input) = 'object'),
    status         text NOT NULL DEFAULT 'queued'
                   CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    published      boolean NOT NULL DEFAULT false,
    object_key     text,
    result         jsonb CHECK (result IS NULL OR jsonb_typeof(result) = 'object'),
    error          text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz,
    completed_at   timestamptz,
    CHECK ((status = 'completed') = (object_key IS NOT NULL)),
    FOREIGN KEY (user_id, environment, workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE
);
CREATE INDEX render_jobs_owner_idx ON render_jobs (user_id, environment, kind, id);
CREATE INDEX render_jobs_unpublished_idx ON render_jobs (created_at)
    WHERE status = 'queued' AND NOT published;
