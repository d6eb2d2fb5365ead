-- Outbound webhooks: a project's subscriptions (URL, events, sealed `whsec_` secrets), one
-- delivery per event and subscription.

CREATE TABLE webhook_subscriptions (
    id                   uuid PRIMARY KEY,
    project_id           uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    url                  text NOT NULL,
    events               text[] NOT NULL CHECK (cardinality(events) > 0),
    description          text,
    enabled              boolean NOT NULL DEFAULT true,
    -- The signing secret, sealed under the KEK (context: the subscription id).
    secret_sealed        bytea NOT NULL,
    -- The secret before the last rotation: still signs (as well) until it expires.
    previous_secret_sealed bytea,
    previous_expires_at  timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_subscriptions_project_idx ON webhook_subscriptions (project_id, id);

-- One event for one subscription. Its id is the `webhook-id` of every attempt.
CREATE TABLE webhook_deliveries (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    subscription_id  uuid NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    event_id         uuid NOT NULL REFERENCES outbound_events (id) ON DELETE CASCADE,
    event_type       text NOT NULL,
    -- pending (waiting for an attempt), delivered, dead (attempts used up)
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts         integer NOT NULL DEFAULT 0,
    last_status_code integer,
    last_error       text,
    -- null: not handed to the broker yet (the relay publishes it).
    published_at     timestamptz,
    delivered_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_project_idx ON webhook_deliveries (project_id, id);
CREATE INDEX webhook_deliveries_unpublished_idx ON webhook_deliveries (created_at)
    WHERE published_at IS NULL;

-- Every event is fanned out to the subscriptions that want it, in the transaction that wrote
-- the event (whoever wrote it).
CREATE FUNCTION outbound_event_fan_out() RETURNS trigger AS $$
BEGIN
    INSERT INTO webhook_deliveries (id, project_id, subscription_id, event_id, event_type)
    SELECT uuid_v7(), NEW.project_id, s.id, NEW.id, NEW.type
      FROM webhook_subscriptions s
     WHERE s.project_id = NEW.project_id AND s.enabled AND NEW.type = ANY (s.events);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER outbound_events_fan_out AFTER INSERT ON outbound_events
    FOR EACH ROW EXECUTE FUNCTION outbound_event_fan_out();

-- `contact.unsubscribed`: whatever ends a subscription to a site (the one-click link, a tool,
-- a complaint), in its transaction.
CREATE FUNCTION contact_unsubscribed_event() RETURNS trigger AS $$
BEGIN
    INSERT INTO outbound_events (id, project_id, type, data)
    SELECT uuid_v7(), c.project_id, 'contact.unsubscribed', jsonb_build_object(
             'contact_id', c.id, 'email', c.email, 'site_id', NEW.site_id,
             'unsubscribed_at', export_ts(now()))
      FROM contacts c WHERE c.id = NEW.contact_id;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER contact_sites_unsubscribed AFTER UPDATE OF status ON contact_sites
    FOR EACH ROW WHEN (NEW.status = 'unsubscribed' AND OLD.status IS DISTINCT FROM 'unsubscribed')
    EXECUTE FUNCTION contact_unsubscribed_event();
