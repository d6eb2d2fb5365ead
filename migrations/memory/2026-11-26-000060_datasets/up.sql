-- Datasets: one per name per owner, rows stored as JSONB, with a column schema inferred from
-- the rows and widened on every write (see `domain::dataset_schema`).
CREATE TABLE datasets (
    id                  uuid PRIMARY KEY,
    user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment         text NOT NULL CHECK (environment IN ('live', 'test')),
    name                text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 120),
    -- [[column name, {"type": ...}], ...] in the order columns first appeared (an array:
    -- jsonb does not keep an object's key order)
    column_types        jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(column_types) = 'array'),
    row_count           bigint NOT NULL DEFAULT 0 CHECK (row_count >= 0),
    owning_worker_type  text CHECK (char_length(owning_worker_type) <= 120),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, environment, name)
);
CREATE INDEX datasets_owner_idx ON datasets (user_id, environment, id);

-- A row's `row_key` is its `id` field as JSON text (`"a"` and `1` are different keys), null for
-- an appended row without one. NULLs are distinct, so only keyed rows are unique.
CREATE TABLE dataset_rows (
    id          uuid PRIMARY KEY,
    dataset_id  uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    row_key     text,
    data        jsonb NOT NULL CHECK (jsonb_typeof(data) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (dataset_id, row_key)
);
CREATE INDEX dataset_rows_page_idx ON dataset_rows (dataset_id, id);

-- Idempotency keys of row writes, per dataset, with the first request's result.
CREATE TABLE dataset_ingest_keys (
    dataset_id       uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    idempotency_key  text NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    inserted         integer NOT NULL CHECK (inserted >= 0),
    updated          integer NOT NULL CHECK (updated >= 0),
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dataset_id, idempotency_key)
);
CREATE INDEX dataset_ingest_keys_created_idx ON dataset_ingest_keys (created_at);

-- Uploaded files waiting for `POST /ingest/upload/confirm`: the file itself (at most 10 MiB,
-- parsed again at confirm), what its preview answered, and once confirmed the result (the
-- file is then dropped). Purged once expired.
CREATE TABLE dataset_uploads (
    id              uuid PRIMARY KEY,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment     text NOT NULL CHECK (environment IN ('live', 'test')),
    dataset_name    text NOT NULL CHECK (char_length(dataset_name) BETWEEN 1 AND 120),
    format          text NOT NULL CHECK (format IN ('csv', 'json', 'ndjson')),
    content         bytea NOT NULL CHECK (octet_length(content) <= 10485760),
    row_count       integer NOT NULL CHECK (row_count >= 0),
    column_types    jsonb NOT NULL CHECK (jsonb_typeof(column_types) = 'array'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    -- Set on confirm: the dataset written and how many rows were added / replaced.
    confirmed_at    timestamptz,
    dataset_id      uuid,
    inserted        integer,
    updated         integer
);
CREATE INDEX dataset_uploads_owner_idx ON dataset_uploads (user_id, environment, expires_at);
CREATE INDEX dataset_uploads_expires_idx ON dataset_uploads (expires_at);
