-- Leads: an intake whose `requested_capability` starts with `lead` (`lead_queued`) waits here
-- for a first-party decision, as a proposal does: accepted or dismissed once (a conditional
-- UPDATE from `pending`). Its arrival is also written as a producer signal (`signal_id`).
CREATE TABLE leads (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment  text NOT NULL CHECK (environment IN ('live', 'test')),
    intake_id    uuid NOT NULL UNIQUE REFERENCES connector_intakes (id) ON DELETE CASCADE,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'dismissed')),
    decided_at   timestamptz,
    -- The first-party credential (or signed-in account) that decided.
    decided_by   uuid,
    -- The producer signal written when the lead arrived (none for leads queued before).
    signal_id    uuid,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'pending') = (decided_at IS NULL))
);
CREATE INDEX leads_owner_idx ON leads (user_id, environment, id);

-- The leads queued before this table: pending, without a signal.
INSERT INTO leads (id, user_id, environment, intake_id, created_at)
SELECT id, user_id, environment, id, created_at
FROM connector_intakes
WHERE outcome = 'lead_queued';
