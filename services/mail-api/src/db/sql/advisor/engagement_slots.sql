SELECT extract(isodow FROM ev.created_at AT TIME ZONE $5)::int4 AS weekday,
       extract(hour FROM ev.created_at AT TIME ZONE $5)::int4 AS hour,
       count(*) FILTER (WHERE ev.kind = 'opened') AS opens,
       count(*) FILTER (WHERE ev.kind = 'clicked') AS clicks
FROM email_log l
JOIN email_events ev ON ev.email_log_id = l.id AND ev.project_id = $1
                    AND ev.kind IN ('opened', 'clicked')
WHERE l.project_id = $1 AND l.site_id = $2 AND l.created_at >= $3
  AND ($4::uuid IS NULL OR l.contact_id = $4)
GROUP BY 1, 2
