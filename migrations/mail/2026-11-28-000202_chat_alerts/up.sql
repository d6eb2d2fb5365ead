-- Chat alerts on bounces and complaints: a project's Slack-compatible incoming-webhook URL
-- (sealed under the KEK; its host in clear for display), and how far the alerts got.
CREATE TABLE chat_alerts (
    project_id    uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    url_sealed    bytea NOT NULL,
    url_host      text NOT NULL,
    -- The last `outbound_events` row reported (at configuration: a UUIDv7 of that moment, so
    -- only later events are reported).
    after_event   uuid NOT NULL,
    last_sent_at  timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
