-- Connector intake: every `POST /connectors/intake` is a row of this ledger, whatever its
-- outcome. `raw_content` is stored as sent and never interpreted. A repeated
-- `Idempotency-Key` of one owner answers the first row (unique index, `ON CONFLICT`).
CREATE TABLE connector_intakes (
    id                    uuid PRIMARY KEY,
    user_id               uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment           text NOT NULL CHECK (environment IN ('live', 'test')),
    -- The credential that sent it (kept when the credential is revoked).
    key_id                uuid NOT NULL,
    ai_vendor             text NOT NULL CHECK (ai_vendor IN ('chatgpt', 'claude', 'gemini', 'custom')),
    workspace_id          uuid,
    requested_capability  text CHECK (char_length(requested_capability) BETWEEN 1 AND 200),
    raw_content           text NOT NULL CHECK (char_length(raw_content) BETWEEN 1 AND 32000),
    outcome               text NOT NULL CHECK (outcome IN ('proposed', 'lead_queued')),
    idempotency_key       text CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX connector_intakes_idempotency_key_idx
    ON connector_intakes (user_id, environment, idempotency_key);
CREATE INDEX connector_intakes_owner_idx ON connector_intakes (user_id, environment, id);

-- The pending proposal of a `proposed` intake, decided once by a first-party credential
-- (a conditional UPDATE from `pending`, so two decisions at once make one). Approving
-- records the intake's content as free-form memory (`memory_entry_ids`) in the same
-- transaction.
CREATE TABLE proposals (
    id                uuid PRIMARY KEY,
    user_id           uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment       text NOT NULL CHECK (environment IN ('live', 'test')),
    intake_id         uuid NOT NULL UNIQUE REFERENCES connector_intakes (id) ON DELETE CASCADE,
    status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    decided_at        timestamptz,
    decided_by        uuid,
    memory_entry_ids  uuid[] NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'pending') = (decided_at IS NULL))
);
CREATE INDEX proposals_owner_idx ON proposals (user_id, environment, id);
