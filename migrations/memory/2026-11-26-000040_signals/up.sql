-- Signals: signed project signals (`POST /ingest/{project_id}`) and producer signals
-- (`POST /signals/ingest`).

-- After a rotation the replaced signing secret keeps verifying for 24 hours (counted from
-- `signing_secret_rotated_at`), so sources can switch over without losing signals.
ALTER TABLE products ADD COLUMN previous_signing_secret bytea;

-- One project signal of a product. `external_id` (the source system's idempotency key) is
-- unique per product: a repeat answers the first signal.
CREATE TABLE project_signals (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment   text NOT NULL CHECK (environment IN ('live', 'test')),
    product_id    uuid NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    event_type    text NOT NULL CHECK (char_length(event_type) BETWEEN 1 AND 200),
    title         text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    severity      text NOT NULL CHECK (severity IN ('info', 'warning', 'error', 'critical')),
    body          jsonb CHECK (body IS NULL OR jsonb_typeof(body) = 'object'),
    external_id   text CHECK (char_length(external_id) BETWEEN 1 AND 255),
    -- How the request was authenticated: `signature` or `bearer`.
    received_via  text NOT NULL CHECK (received_via IN ('signature', 'bearer')),
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX project_signals_external_id_key
    ON project_signals (product_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX project_signals_owner_idx ON project_signals (user_id, environment, id);

-- Producer signals. A signal whose `dedup_key` was last seen within its
-- `collapse_window_minutes` collapses into the open signal of that key (its `count` and
-- `last_seen_at` grow). At most one signal per owner and key is open: the partial unique
-- index makes `INSERT ... ON CONFLICT` collapse exactly under concurrent requests; a signal
-- whose window has passed is closed before a new one opens.
CREATE TABLE producer_signals (
    id                       uuid PRIMARY KEY,
    user_id                  uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment              text NOT NULL CHECK (environment IN ('live', 'test')),
    workspace_id             uuid,
    source                   text NOT NULL,
    entity_scope             text NOT NULL CHECK (entity_scope IN ('user', 'workspace', 'brand', 'product')),
    entity_id                text CHECK (char_length(entity_id) BETWEEN 1 AND 500),
    signal_type              text NOT NULL CHECK (char_length(signal_type) BETWEEN 1 AND 200),
    dedup_key                text NOT NULL CHECK (char_length(dedup_key) BETWEEN 1 AND 500),
    severity                 text NOT NULL CHECK (severity IN ('info', 'warning', 'error', 'critical')),
    title                    text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 500),
    description              text CHECK (char_length(description) <= 4000),
    payload                  jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    evidence                 jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(evidence) = 'array'),
    related_decisions        uuid[] NOT NULL DEFAULT '{}',
    confidence_score         double precision CHECK (confidence_score BETWEEN 0 AND 1),
    collapse_window_minutes  integer NOT NULL CHECK (collapse_window_minutes >= 1),
    count                    integer NOT NULL DEFAULT 1 CHECK (count >= 1),
    open                     boolean NOT NULL DEFAULT true,
    first_seen_at            timestamptz NOT NULL DEFAULT now(),
    last_seen_at             timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX producer_signals_open_key
    ON producer_signals (user_id, environment, dedup_key) WHERE open;
CREATE INDEX producer_signals_owner_idx ON producer_signals (user_id, environment, id);
-- Consolidation asks which decisions a signal references.
CREATE INDEX producer_signals_related_idx
    ON producer_signals USING gin (related_decisions) WHERE related_decisions <> '{}';
