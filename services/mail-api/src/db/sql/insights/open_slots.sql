SELECT extract(hour FROM ev.created_at AT TIME ZONE 'UTC')::int4 AS hour,
       extract(isodow FROM ev.created_at AT TIME ZONE 'UTC')::int4 AS weekday,
       count(*) AS opens
FROM email_log l
JOIN email_events ev ON ev.email_log_id = l.id AND ev.project_id = $1
                    AND ev.kind = 'opened'
WHERE l.project_id = $1 AND l.created_at >= $2 AND l.created_at < $3
  AND ($4::uuid IS NULL OR l.site_id = $4)
GROUP BY 1, 2
