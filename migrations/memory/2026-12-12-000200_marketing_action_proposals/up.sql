-- Autonomous marketing runs propose: each action of a completed run's plan is a row of the
-- intake ledger and a pending proposal, decided on the first-party pages like a connector's.

-- The run whose plan an intake row is an action of (null: a connector's call). Such a row has
-- no credential of its own: the run was started by a first-party credential and the model
-- proposed the action.
ALTER TABLE connector_intakes ADD COLUMN run_id uuid;
ALTER TABLE connector_intakes ALTER COLUMN key_id DROP NOT NULL;
ALTER TABLE connector_intakes ADD CONSTRAINT connector_intakes_key_or_run
    CHECK (key_id IS NOT NULL OR run_id IS NOT NULL);

-- A planned action's details, as the model gave them; an approval records a decision
-- (`decision_id`) and, when the deployment configures a hook, queues its delivery
-- (`hook_id`, a row of `action_hooks`).
ALTER TABLE proposals
    ADD COLUMN run_id       uuid,
    ADD COLUMN action_index integer CHECK (action_index >= 0),
    ADD COLUMN channel      text CHECK (char_length(channel) BETWEEN 1 AND 100),
    ADD COLUMN rationale    text CHECK (char_length(rationale) <= 4000),
    ADD COLUMN priority     integer CHECK (priority BETWEEN 1 AND 5),
    ADD COLUMN decision_id  uuid,
    ADD COLUMN hook_id      uuid;
-- One proposal per action of a run, however often the run's job is delivered.
CREATE UNIQUE INDEX proposals_run_action_idx ON proposals (run_id, action_index)
    WHERE run_id IS NOT NULL;

-- The outbound hook of an approved action (`MEMORY_ACTION_HOOK__URL`), queued on
-- `action.hook` like a run (the relay republishes an unconfirmed publish); delivered once,
-- signed, and retried on failure until the queue's attempts are used up.
CREATE TABLE action_hooks (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment   text NOT NULL CHECK (environment IN ('live', 'test')),
    proposal_id   uuid NOT NULL UNIQUE REFERENCES proposals (id) ON DELETE CASCADE,
    -- The JSON body sent, fixed at approval.
    payload       jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    status        text NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    published     boolean NOT NULL DEFAULT false,
    -- The target's status of the last attempt.
    answer_status integer,
    error         text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    completed_at  timestamptz
);
CREATE INDEX action_hooks_unpublished_idx ON action_hooks (created_at)
    WHERE status = 'queued' AND NOT published;
