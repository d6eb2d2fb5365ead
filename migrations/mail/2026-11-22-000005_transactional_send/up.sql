-- Transactional send: per-project delivery settings (sealed), what the send worker needs on
-- the email log, the history of each email, the transactional outbox, monthly send counters
-- and the receipts of provider webhooks.

-- How a project sends, and the secret its provider signs webhooks with. Both are sealed with
-- AES-256-GCM under the key-encryption key (bound to the project id): a dump reveals neither.
CREATE TABLE project_delivery (
    project_id       uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    provider_config  bytea,
    webhook_secret   bytea,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE email_log
    ADD COLUMN html             text,
    ADD COLUMN text_body        text,
    ADD COLUMN reply_to         text,
    ADD COLUMN headers          jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(headers) = 'array'),
    ADD COLUMN tags             text[] NOT NULL DEFAULT '{}',
    ADD COLUMN tracking         boolean NOT NULL DEFAULT true,
    ADD COLUMN idempotency_key  text,
    ADD COLUMN request_hash     bytea,
    ADD COLUMN attempts         integer NOT NULL DEFAULT 0,
    ADD COLUMN last_error       text,
    ADD COLUMN provider         text,
    ADD COLUMN updated_at       timestamptz NOT NULL DEFAULT now();

ALTER TABLE email_log DROP CONSTRAINT email_log_status_check;
ALTER TABLE email_log ADD CONSTRAINT email_log_status_check CHECK (status IN (
    'accepted', 'queued', 'sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained',
    'failed', 'suppressed'));

-- `idempotency_key` of POST /send: one email per project and key.
CREATE UNIQUE INDEX email_log_idempotency_idx ON email_log (project_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX email_log_project_status_idx ON email_log (project_id, status, id);

-- What happened to each email, in order: accepted, sent, failed, suppressed, delivered,
-- opened, clicked, bounced, complained, unsubscribed.
CREATE TABLE email_events (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    email_log_id  uuid NOT NULL,
    kind          text NOT NULL,
    source        text NOT NULL CHECK (source IN ('api', 'worker', 'tracking', 'webhook')),
    data          jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, email_log_id) REFERENCES email_log (project_id, id) ON DELETE CASCADE
);
CREATE INDEX email_events_email_idx ON email_events (email_log_id, created_at);

-- Transactional outbox: written with the business change, published after the commit, and
-- republished by the relay when that publish was lost.
CREATE TABLE outbox (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    queue         text NOT NULL,
    task          jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    available_at  timestamptz NOT NULL DEFAULT now(),
    attempts      integer NOT NULL DEFAULT 0
);
CREATE INDEX outbox_available_idx ON outbox (available_at);

-- Emails sent per project and calendar month (UTC), counted in the send transaction so the
-- plan's monthly quota is exact under concurrency.
CREATE TABLE project_monthly_sends (
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    month       date NOT NULL,
    sends       bigint NOT NULL DEFAULT 0 CHECK (sends >= 0),
    PRIMARY KEY (project_id, month)
);

-- Provider webhooks received, deduplicated by (provider, webhook-id).
CREATE TABLE webhook_receipts (
    id            uuid PRIMARY KEY,
    provider      text NOT NULL,
    webhook_id    text NOT NULL,
    project_id    uuid REFERENCES projects (id) ON DELETE CASCADE,
    event_type    text,
    payload       jsonb NOT NULL,
    status        text NOT NULL DEFAULT 'received'
                  CHECK (status IN ('received', 'applied', 'ignored', 'failed')),
    email_log_id  uuid,
    attempts      integer NOT NULL DEFAULT 0,
    last_error    text,
    received_at   timestamptz NOT NULL DEFAULT now(),
    processed_at  timestamptz,
    UNIQUE (provider, webhook_id)
);
