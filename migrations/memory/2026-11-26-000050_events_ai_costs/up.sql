-- Business events (`POST /ingest/events`). A repeated `idempotency_key` or `external_id` of
-- one owner answers the first event: the unique indexes make that exact under concurrent
-- requests (the insert is `ON CONFLICT DO NOTHING`). NULLs never collide. Keys are kept as
-- long as the event.
CREATE TABLE events (
    id               uuid PRIMARY KEY,
    user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment      text NOT NULL CHECK (environment IN ('live', 'test')),
    event_type       text NOT NULL CHECK (char_length(event_type) BETWEEN 1 AND 120),
    severity         text NOT NULL CHECK (severity IN ('info', 'warning', 'error', 'critical')),
    external_id      text CHECK (char_length(external_id) BETWEEN 1 AND 255),
    idempotency_key  text CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    occurred_at      timestamptz NOT NULL,
    worker_type      text CHECK (char_length(worker_type) BETWEEN 1 AND 120),
    payload          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(payload) = 'object'),
    received_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX events_idempotency_key_idx ON events (user_id, environment, idempotency_key);
CREATE UNIQUE INDEX events_external_id_idx ON events (user_id, environment, external_id);
CREATE INDEX events_owner_idx ON events (user_id, environment, occurred_at);

-- AI cost telemetry: the `ai_cost` events' payloads, typed, with the cost in exact decimal
-- (summed as numeric, never as floating point).
CREATE TABLE ai_cost_events (
    event_id       uuid PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment    text NOT NULL CHECK (environment IN ('live', 'test')),
    product        text NOT NULL CHECK (char_length(product) BETWEEN 1 AND 100),
    model          text NOT NULL CHECK (char_length(model) BETWEEN 1 AND 200),
    input_tokens   bigint NOT NULL CHECK (input_tokens BETWEEN 0 AND 1000000000),
    output_tokens  bigint NOT NULL CHECK (output_tokens BETWEEN 0 AND 1000000000),
    cost_usd       numeric(16, 10) NOT NULL CHECK (cost_usd BETWEEN 0 AND 100000),
    occurred_at    timestamptz NOT NULL
);
CREATE INDEX ai_cost_events_window_idx ON ai_cost_events (user_id, environment, occurred_at);
CREATE INDEX ai_cost_events_product_idx ON ai_cost_events (user_id, environment, product, occurred_at);
