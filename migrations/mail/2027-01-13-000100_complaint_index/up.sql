-- The abuse monitor (db/sql/abuse_monitor/measure.sql) reads the window's complaints, as it
-- reads its hard bounces through `email_events_hard_bounce_idx`: this partial index holds
-- only complaint events, few beside the month's sends, opens and clicks.
CREATE INDEX email_events_complaint_idx ON email_events (created_at) WHERE kind = 'complained';
