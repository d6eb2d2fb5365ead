-- Two-call confirmation of destructive MCP tools: the first call stores a token's SHA-256,
-- bound to the key, the tool and a hash of the arguments; the second call spends it once.
CREATE TABLE mcp_confirmations (
    token_hash     bytea PRIMARY KEY,
    project_id     uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key_id         uuid NOT NULL,
    tool           text NOT NULL,
    arguments_hash bytea NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz
);

CREATE INDEX mcp_confirmations_expires_at ON mcp_confirmations (expires_at);
