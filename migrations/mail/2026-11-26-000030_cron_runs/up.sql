-- The runs of the periodic jobs (housekeeping purge, outbox relay, expired send claims): one
-- row per run, with what it did per project in cron_run_counts. The jobs are the
-- deployment's; a project sees the runs and only its own counts.
CREATE TABLE cron_runs (
    id uuid PRIMARY KEY,
    job text NOT NULL,
    started_at timestamptz NOT NULL,
    finished_at timestamptz,
    outcome text NOT NULL CHECK (outcome IN ('running', 'ok', 'failed')),
    -- For operators only: never shown to a project.
    error text,
    -- Rows acted on in all, every project together: for operators only.
    total bigint NOT NULL DEFAULT 0
);
CREATE INDEX cron_runs_job_idx ON cron_runs (job, id);
CREATE INDEX cron_runs_started_idx ON cron_runs (started_at);

CREATE TABLE cron_run_counts (
    run_id uuid NOT NULL REFERENCES cron_runs (id) ON DELETE CASCADE,
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    what text NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (run_id, project_id, what)
);
CREATE INDEX cron_run_counts_project_idx ON cron_run_counts (project_id, run_id);
