-- Social publishing: connected accounts, the OAuth states of connections under way, posts,
-- their publication on each platform, the outbox that queues publishing, and social
-- campaigns with their tracked links.

-- One connected account per project and platform. Tokens are sealed; never answered.
CREATE TABLE social_accounts (
    project_id      uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    platform        text NOT NULL,
    -- The account's name on the platform (a handle, a page, a chat), when it tells.
    handle          text,
    access_sealed   bytea NOT NULL,
    refresh_sealed  bytea,
    -- When the access token stops working (null: the platform gave no expiry).
    expires_at      timestamptz,
    connected_at    timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (project_id, platform)
);

-- An authorization under way: the state sent to the platform (stored as its SHA-256), the
-- PKCE verifier, single use and expiring.
CREATE TABLE social_connect_states (
    state_hash     bytea PRIMARY KEY,
    project_id     uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    platform       text NOT NULL,
    code_verifier  text NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz
);
CREATE INDEX social_connect_states_expiry_idx ON social_connect_states (expires_at);

CREATE TABLE social_campaigns (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name             text NOT NULL,
    platform         text NOT NULL,
    destination_url  text NOT NULL,
    -- The signed click link its posts carry (counted in `clicks`).
    tracked_url      text NOT NULL,
    clicks           bigint NOT NULL DEFAULT 0 CHECK (clicks >= 0),
    created_at       timestamptz NOT NULL,
    UNIQUE (project_id, id)
);
CREATE INDEX social_campaigns_project_idx ON social_campaigns (project_id, id);

CREATE TABLE social_posts (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    title         text NOT NULL,
    content       text NOT NULL,
    platforms     text[] NOT NULL,
    campaign_id   uuid,
    -- Who publishes a campaign's post (schedule_social_post), free text.
    publisher     text,
    -- When publishing was asked for (null: a draft); the post is published at that time.
    publish_at    timestamptz,
    -- Set while an agent's request to publish waits for a person.
    approval_id   uuid,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    UNIQUE (project_id, id),
    CONSTRAINT social_posts_same_project_campaign
        FOREIGN KEY (project_id, campaign_id) REFERENCES social_campaigns (project_id, id)
        ON DELETE SET NULL (campaign_id)
);
CREATE INDEX social_posts_project_idx ON social_posts (project_id, id);

-- A post on one platform: published once, its id on the platform kept.
CREATE TABLE social_publications (
    id                uuid PRIMARY KEY,
    project_id        uuid NOT NULL,
    post_id           uuid NOT NULL,
    platform          text NOT NULL,
    status            text NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'published', 'failed')),
    platform_post_id  text,
    attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error        text,
    -- A worker publishing it holds it until then (a crashed worker's hold runs out).
    claimed_until     timestamptz,
    published_at      timestamptz,
    UNIQUE (post_id, platform),
    CONSTRAINT social_publications_same_project_post
        FOREIGN KEY (project_id, post_id) REFERENCES social_posts (project_id, id)
        ON DELETE CASCADE
);

-- Publishing to queue: written in the transaction that asks for it, relayed to the queue
-- once due (a 429 writes another, due after the platform's Retry-After).
CREATE TABLE social_publish_outbox (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL,
    post_id       uuid NOT NULL,
    due_at        timestamptz NOT NULL,
    relayed_at    timestamptz,
    CONSTRAINT social_publish_outbox_same_project_post
        FOREIGN KEY (project_id, post_id) REFERENCES social_posts (project_id, id)
        ON DELETE CASCADE
);
CREATE INDEX social_publish_outbox_due_idx ON social_publish_outbox (due_at)
    WHERE relayed_at IS NULL;
