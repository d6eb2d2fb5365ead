-- SMS: a provider per project (Twilio; the auth token sealed), each contact's number and
-- consent, SMS campaigns, the texts sent (the log, which is also the outbox of the send
-- queue) and the texts received.
CREATE TABLE sms_providers (
    project_id        uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    provider          text NOT NULL CHECK (provider IN ('twilio')),
    account_sid       text NOT NULL,
    -- AES-256-GCM under the key-encryption key, bound to the project.
    auth_token_sealed bytea NOT NULL,
    -- E.164.
    from_number       text NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
);

-- A contact's mobile number (E.164) and whether it may be texted.
CREATE TABLE contact_sms (
    project_id     uuid NOT NULL,
    contact_id     uuid NOT NULL,
    phone          text NOT NULL,
    consent        text NOT NULL CHECK (consent IN ('granted', 'revoked')),
    -- Where the consent last changed: 'api' or 'inbound' (a keyword the contact texted).
    consent_source text NOT NULL,
    -- IANA time zone of the contact's quiet hours; null: the deployment's default.
    timezone       text,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (project_id, contact_id),
    CONSTRAINT contact_sms_same_project_contact
        FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id) ON DELETE CASCADE
);
-- Inbound keywords change the consent of every contact with the number.
CREATE INDEX contact_sms_phone_idx ON contact_sms (project_id, phone);

CREATE TABLE sms_campaigns (
    id                 uuid PRIMARY KEY,
    project_id         uuid NOT NULL,
    site_id            uuid NOT NULL,
    name               text NOT NULL,
    body               text NOT NULL,
    -- Texts written (contacts of the site with consent), and subscribers left out without.
    recipients         integer NOT NULL CHECK (recipients >= 0),
    skipped_no_consent integer NOT NULL CHECK (skipped_no_consent >= 0),
    created_at         timestamptz NOT NULL,
    UNIQUE (project_id, id),
    CONSTRAINT sms_campaigns_same_project_site
        FOREIGN KEY (project_id, site_id) REFERENCES sites (project_id, id) ON DELETE CASCADE
);

-- Every text: the log, and the outbox of `sms.send` (published once `send_after` has come,
-- which holds campaign texts through the contact's quiet hours).
CREATE TABLE sms_messages (
    id                 uuid PRIMARY KEY,
    project_id         uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    contact_id         uuid,
    campaign_id        uuid,
    to_phone           text NOT NULL,
    body               text NOT NULL,
    status             text NOT NULL CHECK (status IN
        ('queued', 'sending', 'sent', 'delivered', 'undelivered', 'failed', 'canceled')),
    -- Why it waits or did not go ('quiet_hours', 'no_consent', the provider's error).
    reason             text,
    send_after         timestamptz NOT NULL,
    published_at       timestamptz,
    -- Set when an attempt may have reached the provider without its answer being recorded:
    -- the next attempt looks for the text at the provider before sending again.
    attempt_started_at timestamptz,
    -- A worker's attempt in progress; another delivery waits until it ends.
    lease_until        timestamptz,
    provider_sid       text,
    idempotency_key    text,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    UNIQUE (project_id, id),
    UNIQUE (project_id, idempotency_key),
    -- A campaign texts a contact once.
    UNIQUE (campaign_id, contact_id),
    UNIQUE (provider_sid),
    CONSTRAINT sms_messages_same_project_contact
        FOREIGN KEY (project_id, contact_id) REFERENCES contacts (project_id, id) ON DELETE CASCADE,
    CONSTRAINT sms_messages_same_project_campaign
        FOREIGN KEY (project_id, campaign_id) REFERENCES sms_campaigns (project_id, id) ON DELETE CASCADE
);
CREATE INDEX sms_messages_project_idx ON sms_messages (project_id, id);
CREATE INDEX sms_messages_outbox_idx ON sms_messages (send_after) WHERE published_at IS NULL;

-- Texts received (deduplicated by the provider's message id).
CREATE TABLE sms_inbound (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    message_sid text NOT NULL,
    from_phone  text NOT NULL,
    to_phone    text NOT NULL,
    body        text NOT NULL,
    -- 'stop', 'start' or 'help' when the text was one of their keywords.
    keyword     text CHECK (keyword IN ('stop', 'start', 'help')),
    received_at timestamptz NOT NULL,
    UNIQUE (project_id, message_sid)
);
CREATE INDEX sms_inbound_project_idx ON sms_inbound (project_id, id);
