-- The bounce-rate watch (db/sql/outbound_events/check_bounce_rate.sql) counts a site's hard
-- bounces of the last 24 hours: this partial index holds only bounce events, so the count
-- reads the window's bounces instead of scanning every event of the month. Its sends come
-- from email_log_site_window_idx, whose INCLUDE columns answer them from the index alone.
CREATE INDEX email_events_bounced_idx ON email_events (project_id, created_at)
    WHERE kind = 'bounced';
