-- Approvals: which actions of which credentials wait for a person (a policy per project), and
-- the ledger of the actions waiting, each bound to the hash of its canonical arguments.

-- An agent's key (its actions follow the policy like an OAuth client's), and the `approve`
-- right (a key that may decide approvals).
ALTER TABLE api_keys
    ADD COLUMN agent boolean NOT NULL DEFAULT false,
    ADD COLUMN approve boolean NOT NULL DEFAULT false;

CREATE TABLE approval_policies (
    project_id               uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    -- Whose actions need approval: 'agents' (OAuth clients and agent keys), 'all_but_admin'
    -- (also keys below admin), 'everyone' (every credential).
    applies_to               text NOT NULL DEFAULT 'agents'
                             CHECK (applies_to IN ('agents', 'all_but_admin', 'everyone')),
    campaign_launch          boolean NOT NULL DEFAULT true,
    -- null: never; n: a send past n recipients in the project's UTC day.
    send_recipients_per_day  integer CHECK (send_recipients_per_day >= 0),
    -- null: never; n: a segment enrollment of more than n contacts.
    enroll_segment_size      integer CHECK (enroll_segment_size >= 0),
    bulk_delete              boolean NOT NULL DEFAULT true,
    expires_after_minutes    integer NOT NULL DEFAULT 1440
                             CHECK (expires_after_minutes BETWEEN 5 AND 43200),
    updated_at               timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE approvals (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    action           text NOT NULL,
    -- The canonical arguments (keys sorted) and their SHA-256: what is approved is what runs.
    arguments        jsonb NOT NULL,
    arguments_hash   bytea NOT NULL,
    summary          text NOT NULL,
    -- The credential that asked: an API key's or an OAuth token's id.
    requested_by     uuid NOT NULL,
    requester        text NOT NULL CHECK (requester IN ('oauth_client', 'agent_key', 'api_key')),
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    reason           text,
    decided_by       uuid,
    decided_at       timestamptz,
    -- What the approved action answered.
    result           jsonb,
    expires_at       timestamptz NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT approvals_project_id_id_key UNIQUE (project_id, id)
);
CREATE INDEX approvals_project_idx ON approvals (project_id, id);
CREATE INDEX approvals_pending_idx ON approvals (project_id, id) WHERE status = 'pending';
