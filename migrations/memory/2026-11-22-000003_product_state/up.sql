-- Every version of a product's state is kept; the newest is the current one.
CREATE TABLE product_states (
    id          uuid PRIMARY KEY,
    product_id  uuid NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    version     integer NOT NULL CHECK (version > 0),
    state       jsonb NOT NULL CHECK (jsonb_typeof(state) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (product_id, version)
);

-- The intelligence feed of a user and environment (decisions, state changes, anomalies).
CREATE TABLE feed_items (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment   text NOT NULL CHECK (environment IN ('live', 'test')),
    type          text NOT NULL CHECK (type IN ('decision', 'state_change', 'anomaly')),
    product_name  text,
    summary       text NOT NULL,
    severity      text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feed_items_owner_idx ON feed_items (user_id, environment, id);
