-- Each site's emails sent in the window ending at $1 ($2 days long), and how many of them
-- hard-bounced (soft bounces do not count) or drew a complaint: the sites that sent in the
-- window, and those the monitor left in another state than `ok` (so they can recover).
SELECT s.project_id, s.id AS site_id, f.sends, f.bounces, f.complaints
  FROM sites s
  CROSS JOIN LATERAL (
    SELECT count(*) AS sends,
           count(*) FILTER (WHERE EXISTS (
             SELECT 1 FROM email_events ev
              WHERE ev.email_log_id = l.id AND ev.kind = 'bounced'
                AND coalesce(lower(ev.data #>> '{bounce,type}'), 'permanent')
                    NOT IN ('transient', 'soft', 'temporary'))) AS bounces,
           count(*) FILTER (WHERE EXISTS (
             SELECT 1 FROM email_events ev
              WHERE ev.email_log_id = l.id AND ev.kind = 'complained')) AS complaints
      FROM email_log l
     WHERE l.site_id = s.id AND l.sent_at IS NOT NULL
       AND l.created_at > $1::timestamptz - make_interval(days => $2::int)
       AND l.created_at <= $1::timestamptz) f
 WHERE f.sends > 0
    OR EXISTS (SELECT 1 FROM abuse_monitor m WHERE m.site_id = s.id AND m.state <> 'ok')
