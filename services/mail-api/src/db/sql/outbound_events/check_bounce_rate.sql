-- The site's sends are its emails created in the last 24 hours that went out or were refused
-- (any status past `queued` but failed, suppressed and cancelled), which
-- email_log_site_window_idx answers alone where the site is a small part of the table; its
-- hard bounces are the bounce events of those 24 hours, read through
-- email_events_hard_bounce_idx (whose predicate is the test below, word for word).
WITH sends AS (
  SELECT count(*) AS n FROM email_log
   WHERE site_id = $2 AND created_at > now() - interval '24 hours' AND project_id = $1
     AND status IN ('sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained')),
hard AS (
  SELECT count(DISTINCT ev.email_log_id) AS n FROM email_events ev
    JOIN email_log l ON l.id = ev.email_log_id
   WHERE ev.project_id = $1 AND l.site_id = $2 AND ev.kind = 'bounced'
     AND ev.created_at > now() - interval '24 hours'
     AND coalesce(lower(ev.data #>> '{bounce,type}'), 'permanent')
         NOT IN ('transient', 'soft', 'temporary'))
INSERT INTO outbound_events (id, project_id, type, data)
SELECT $3, $1, 'bounce_rate.warning', jsonb_build_object(
  'site_id', $2::uuid, 'window_hours', 24, 'sends', sends.n, 'hard_bounces', hard.n,
  'bounce_rate', round(hard.n::numeric / sends.n, 4), 'threshold', $4::float8,
  'occurred_at', export_ts(now()))
  FROM sends, hard
 WHERE sends.n >= $5 AND sends.n > 0 AND hard.n::float8 / sends.n > $4
   AND NOT EXISTS (SELECT 1 FROM outbound_events o
        WHERE o.project_id = $1 AND o.type = 'bounce_rate.warning'
          AND o.data->>'site_id' = $2::text
          AND o.created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
