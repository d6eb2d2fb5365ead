-- Marketing video renders (`POST /render/video`, `POST /render/video/jobs`). A job is recorded
-- here, then queued on RabbitMQ (`render.job`); the render worker splits the brief into scene
-- chunks, draws and encodes each, concatenates them into one MP4 in the object store and
-- records it with the cost. The brand object is not kept: only the colours drawn. `published`
-- says the broker confirmed the task; the relay publishes again the jobs whose publish was lost.
CREATE TABLE render_video_jobs (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment   text NOT NULL CHECK (environment IN ('live', 'test')),
    workspace_id  uuid,
    brief         text NOT NULL,
    format        text NOT NULL
                  CHECK (format IN ('short_video', 'square_video', 'story_video', 'wide_video')),
    duration      integer NOT NULL CHECK (duration BETWEEN 5 AND 180),
    run_id        uuid,
    -- What else the job was asked: {"style": {"background", "primary", "text"} as #rrggbb,
    -- "template", "product_id"}.
    input         jsonb NOT NULL CHECK (jsonb_typeof(input) = 'object'),
    status        text NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    published     boolean NOT NULL DEFAULT false,
    -- Once completed: {"asset_key", "cost_cents", "scenes", "scenes_reused"}.
    result        jsonb CHECK (result IS NULL OR jsonb_typeof(result) = 'object'),
    error         text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    completed_at  timestamptz,
    CHECK ((status = 'completed') = (result IS NOT NULL)),
    FOREIGN KEY (user_id, environment, workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE
);
CREATE INDEX render_video_jobs_owner_idx ON render_video_jobs (user_id, environment, id);
CREATE INDEX render_video_jobs_unpublished_idx ON render_video_jobs (created_at)
    WHERE status = 'queued' AND NOT published;

-- The scene chunks rendered for a `run_id`, by the hash of what they show (text, colours,
-- format, seconds, frame rate, renderer version): a later render of the same run reuses them.
CREATE TABLE render_video_scenes (
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment  text NOT NULL CHECK (environment IN ('live', 'test')),
    run_id       uuid NOT NULL,
    scene_hash   text NOT NULL,
    object_key   text NOT NULL,
    seconds      integer NOT NULL CHECK (seconds > 0),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, environment, run_id, scene_hash)
);
