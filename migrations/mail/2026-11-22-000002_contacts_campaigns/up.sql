-- Contacts, their site subscriptions, campaigns (shells), enrollments, events, the email log,
-- conversions, templates, suppressions, per-project usage counters and idempotency records.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Recursive JSON merge: objects merge key by key, any other value replaces.
CREATE FUNCTION jsonb_deep_merge(base jsonb, patch jsonb) RETURNS jsonb AS $$
    SELECT CASE
        WHEN jsonb_typeof(base) = 'object' AND jsonb_typeof(patch) = 'object' THEN (
            SELECT coalesce(jsonb_object_agg(
                coalesce(b.key, p.key),
                CASE
                    WHEN p.key IS NULL THEN b.value
                    WHEN b.key IS NULL THEN p.value
                    ELSE jsonb_deep_merge(b.value, p.value)
                END), '{}'::jsonb)
            FROM jsonb_each(base) b FULL JOIN jsonb_each(patch) p ON b.key = p.key
        )
        ELSE patch
    END
$$ LANGUAGE sql IMMUTABLE;

-- Counted here (not with count(*)) so that the plan's contact limit is exact under concurrency:
-- creating a contact increments the row in the same transaction.
CREATE TABLE project_usage (
    project_id  uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    contacts    bigint NOT NULL DEFAULT 0 CHECK (contacts >= 0)
);

-- Email is stored trimmed and lowercased; it identifies the contact inside its project.
CREATE TABLE contacts (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    email        text NOT NULL,
    first_name   text,
    last_name    text,
    properties   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(properties) = 'object'),
    tags         text[] NOT NULL DEFAULT '{}',
    attribution  jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(attribution) = 'object'),
    source       text NOT NULL CHECK (source IN ('identify', 'api', 'contacts')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, email)
);
CREATE INDEX contacts_project_id_idx ON contacts (project_id, id);
CREATE INDEX contacts_tags_idx ON contacts USING gin (tags);
CREATE INDEX contacts_search_idx ON contacts USING gin (
    (email || ' ' || coalesce(first_name, '') || ' ' || coalesce(last_name, '')) gin_trgm_ops
);

-- A contact's subscription to a site.
CREATE TABLE contact_sites (
    contact_id  uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    site_id     uuid NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    status      text NOT NULL DEFAULT 'subscribed' CHECK (status IN ('subscribed', 'unsubscribed')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (contact_id, site_id)
);
CREATE INDEX contact_sites_site_idx ON contact_sites (site_id, contact_id);

CREATE TABLE campaigns (
    id                  uuid PRIMARY KEY,
    project_id          uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    site_id             uuid NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    name                text NOT NULL,
    type                text NOT NULL CHECK (type IN ('drip', 'triggered')),
    status              text NOT NULL DEFAULT 'draft'
                        CHECK (status IN ('draft', 'active', 'paused', 'completed', 'archived')),
    trigger_event_name  text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK ((type = 'triggered') = (trigger_event_name IS NOT NULL))
);
CREATE INDEX campaigns_project_idx ON campaigns (project_id, id);
CREATE INDEX campaigns_site_idx ON campaigns (site_id, id);
-- What /events and /identify look up on every call.
CREATE INDEX campaigns_triggered_idx ON campaigns (project_id, trigger_event_name)
    WHERE type = 'triggered' AND status = 'active';
CREATE INDEX campaigns_signup_idx ON campaigns (site_id) WHERE type = 'drip' AND status = 'active';

-- Named events per contact. Analytics reads them by (project, name, time).
CREATE TABLE events (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    contact_id  uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    name        text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_project_name_time_idx ON events (project_id, name, created_at);
CREATE INDEX events_project_time_idx ON events (project_id, created_at);
CREATE INDEX events_contact_time_idx ON events (contact_id, created_at);

-- A contact in a campaign. At most one enrollment that is not exited per campaign and contact:
-- the partial unique index is what makes concurrent enrollment exact.
CREATE TABLE enrollments (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    campaign_id  uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    contact_id   uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed', 'exited')),
    source       text NOT NULL CHECK (source IN ('signup', 'event', 'manual')),
    event_id     uuid REFERENCES events (id) ON DELETE SET NULL,
    enrolled_at  timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX enrollments_current_idx ON enrollments (campaign_id, contact_id)
    WHERE status <> 'exited';
CREATE INDEX enrollments_contact_idx ON enrollments (contact_id);
CREATE INDEX enrollments_project_time_idx ON enrollments (project_id, enrolled_at);

-- One row per email handed to the provider. Sending fills it; attribution reads the latest
-- send, open and click of a contact.
CREATE TABLE email_log (
    id                   uuid PRIMARY KEY,
    project_id           uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    site_id              uuid NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    contact_id           uuid REFERENCES contacts (id) ON DELETE SET NULL,
    campaign_id          uuid REFERENCES campaigns (id) ON DELETE SET NULL,
    to_email             text NOT NULL,
    subject              text NOT NULL,
    status               text NOT NULL DEFAULT 'accepted' CHECK (status IN (
                             'accepted', 'queued', 'sent', 'delivered', 'opened', 'clicked',
                             'bounced', 'complained')),
    provider_message_id  text,
    open_count           integer NOT NULL DEFAULT 0,
    clicked_urls         text[] NOT NULL DEFAULT '{}',
    created_at           timestamptz NOT NULL DEFAULT now(),
    sent_at              timestamptz,
    last_opened_at       timestamptz,
    last_clicked_at      timestamptz
);
CREATE INDEX email_log_project_time_idx ON email_log (project_id, created_at);
CREATE INDEX email_log_site_time_idx ON email_log (site_id, created_at);
CREATE INDEX email_log_campaign_idx ON email_log (campaign_id) WHERE campaign_id IS NOT NULL;
CREATE INDEX email_log_contact_sent_idx ON email_log (contact_id, sent_at);
CREATE UNIQUE INDEX email_log_provider_message_idx ON email_log (provider_message_id)
    WHERE provider_message_id IS NOT NULL;

CREATE TABLE conversions (
    id             uuid PRIMARY KEY,
    project_id     uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    contact_id     uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    email_log_id   uuid REFERENCES email_log (id) ON DELETE SET NULL,
    campaign_id    uuid REFERENCES campaigns (id) ON DELETE SET NULL,
    event          text NOT NULL,
    revenue        numeric NOT NULL DEFAULT 0,
    currency       text NOT NULL,
    order_id       text,
    metadata       jsonb NOT NULL DEFAULT '{}',
    attribution    text NOT NULL CHECK (attribution IN ('click', 'open', 'send', 'unattributed')),
    attributed_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, order_id)
);
CREATE INDEX conversions_project_time_idx ON conversions (project_id, attributed_at);
CREATE INDEX conversions_campaign_idx ON conversions (campaign_id) WHERE campaign_id IS NOT NULL;
CREATE INDEX conversions_contact_idx ON conversions (contact_id);

CREATE TABLE templates (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name          text NOT NULL,
    brief         text NOT NULL,
    subject_hint  text,
    category      text NOT NULL,
    tags          text[] NOT NULL DEFAULT '{}',
    html          text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX templates_project_idx ON templates (project_id, id);
CREATE INDEX templates_category_idx ON templates (project_id, category, id);

-- Addresses never sent to. One row per project and (lowercased) address.
CREATE TABLE suppressions (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    email       text NOT NULL,
    reason      text NOT NULL CHECK (reason IN ('manual', 'bounced', 'complained', 'unsubscribed')),
    note        text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, email)
);
CREATE INDEX suppressions_project_idx ON suppressions (project_id, id);

-- The first answer to a request carrying an idempotency key, replayed to its retries. The row
-- is claimed and answered in the business transaction, so a concurrent retry waits for it.
CREATE TABLE idempotency_keys (
    project_id       uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    route            text NOT NULL,
    key              text NOT NULL,
    request_hash     bytea NOT NULL,
    response_status  smallint,
    response_body    jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, route, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
