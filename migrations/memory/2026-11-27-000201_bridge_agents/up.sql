-- Agent bridge runs: each writes an agent context file (such as AGENTS.md) from the identity
-- kernel, the product states and the recent decisions of a workspace, within a token budget.
-- A run is recorded here, then queued on RabbitMQ (`bridge.generate`); `published` says the
-- broker confirmed it, and the relay publishes again the runs whose publish was lost.
CREATE TABLE bridge_runs (
    id               uuid PRIMARY KEY,
    user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment      text NOT NULL CHECK (environment IN ('live', 'test')),
    workspace_id     uuid,
    file_name        text NOT NULL CHECK (char_length(file_name) BETWEEN 1 AND 255),
    budget_tokens    integer NOT NULL CHECK (budget_tokens BETWEEN 128 AND 32000),
    decisions_limit  integer NOT NULL CHECK (decisions_limit BETWEEN 0 AND 200),
    status           text NOT NULL DEFAULT 'queued'
                     CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    published        boolean NOT NULL DEFAULT false,
    content          text,
    token_count      integer CHECK (token_count >= 0),
    -- What the file holds and leaves out, and the fingerprint of the memory it was written
    -- from: {"truncated", "included": {...}, "omitted": {...}, "fingerprint"}.
    summary          jsonb CHECK (summary IS NULL OR jsonb_typeof(summary) = 'object'),
    error            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    completed_at     timestamptz,
    CHECK ((status = 'completed') = (content IS NOT NULL)),
    FOREIGN KEY (user_id, environment, workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE CASCADE
);
CREATE INDEX bridge_runs_owner_idx ON bridge_runs (user_id, environment, id);
CREATE INDEX bridge_runs_unpublished_idx ON bridge_runs (created_at)
    WHERE status = 'queued' AND NOT published;

-- Agents the user connected (`POST /agents/connect`): each holds a connector token of its own
-- (read and propose only), whose active workspace is the agent's.
CREATE TABLE agents (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment   text NOT NULL CHECK (environment IN ('live', 'test')),
    name          text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    kind          text NOT NULL CHECK (kind IN ('claude_code', 'codex', 'cursor', 'gemini_cli',
                                                'github_copilot', 'custom')),
    context_file  text NOT NULL CHECK (char_length(context_file) BETWEEN 1 AND 255),
    workspace_id  uuid,
    key_id        uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    connected_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, environment, name),
    FOREIGN KEY (user_id, environment, workspace_id)
        REFERENCES workspaces (user_id, environment, id) ON DELETE SET NULL (workspace_id)
);
CREATE INDEX agents_owner_idx ON agents (user_id, environment, id);
