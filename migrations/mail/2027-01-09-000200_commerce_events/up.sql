-- Commerce platforms (Stripe, Shopify) whose signed webhooks become contact events: each
-- source's endpoint secret is sealed under the key-encryption key (bound to the project and
-- the source), never answered; the contacts its events name are found or created on its site.
CREATE TABLE commerce_sources (
    id                      uuid PRIMARY KEY,
    project_id              uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    platform                text NOT NULL CHECK (platform IN ('stripe', 'shopify')),
    site_id                 uuid NOT NULL,
    signing_secret_sealed   bytea NOT NULL,
    created_at              timestamptz NOT NULL,
    UNIQUE (project_id, id),
    FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);
CREATE INDEX commerce_sources_project_idx ON commerce_sources (project_id, id);

-- What a platform event type does in the project: every trigger matching an event's
-- (platform, event type) is applied. The action's own field is set, the others null.
CREATE TABLE platform_triggers (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    platform        text NOT NULL CHECK (platform IN ('stripe', 'shopify')),
    event_type      text NOT NULL,
    action          text NOT NULL
        CHECK (action IN ('fire_event', 'tag', 'enroll', 'record_conversion')),
    -- fire_event: the contact event's name.
    event_name      text,
    -- tag: the tag added to the contact.
    tag             text,
    -- enroll: the campaign the contact is enrolled in (the trigger goes with it).
    campaign_id     uuid,
    created_at      timestamptz NOT NULL,
    UNIQUE (project_id, id),
    FOREIGN KEY (project_id, campaign_id) REFERENCES campaigns (project_id, id) ON DELETE CASCADE,
    CHECK (action <> 'fire_event' OR event_name IS NOT NULL),
    CHECK (action <> 'tag' OR tag IS NOT NULL),
    CHECK (action <> 'enroll' OR campaign_id IS NOT NULL)
);
CREATE INDEX platform_triggers_match_idx ON platform_triggers (project_id, platform, event_type);

-- Every verified webhook received, once: the unique (project, platform, platform's event
-- id) makes a replayed webhook do nothing, and the row is written in the transaction that
-- applies the triggers, so an event is applied whole or not at all.
CREATE TABLE platform_events (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    -- The source it came through (no reference: the log outlives a deleted source).
    source_id       uuid NOT NULL,
    platform        text NOT NULL CHECK (platform IN ('stripe', 'shopify')),
    event_type      text NOT NULL,
    -- Stripe's `evt_…` id, Shopify's `X-Shopify-Webhook-Id`.
    event_id        text NOT NULL,
    -- The contact it named (no reference: erasing a contact keeps the log, without address).
    contact_id      uuid,
    -- `applied`, `no_trigger` or `failed`.
    outcome         text NOT NULL CHECK (outcome IN ('applied', 'no_trigger', 'failed')),
    -- What each applied trigger did: [{trigger_id, action, …}].
    actions         jsonb NOT NULL DEFAULT '[]',
    -- Why a `failed` event applied nothing.
    error           text,
    received_at     timestamptz NOT NULL,
    UNIQUE (project_id, platform, event_id)
);
CREATE INDEX platform_events_project_idx ON platform_events (project_id, id DESC);
