SELECT s.id, s.name, s.slug, d.*, v.converted, g.*
FROM sites s
CROSS JOIN LATERAL (
    SELECT {DELIVERY_COUNTS} FROM email_log
     WHERE site_id = s.id AND project_id = $1
       AND created_at >= $2 AND created_at < $3) d
CROSS JOIN LATERAL (
    SELECT count(*) AS converted FROM conversions cv
      JOIN email_log l ON l.project_id = cv.project_id AND l.id = cv.email_log_id
     WHERE cv.project_id = $1 AND l.site_id = s.id
       AND cv.attributed_at >= $2 AND cv.attributed_at < $3) v
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE status = 'subscribed') AS subscribers,
           count(*) FILTER (WHERE created_at >= $2 AND created_at < $3)
               AS new_subscribers,
           count(*) FILTER (WHERE status = 'unsubscribed'
                              AND updated_at >= $2 AND updated_at < $3) AS unsubscribed
      FROM contact_sites WHERE site_id = s.id) g
WHERE s.project_id = $1 AND ($4::uuid IS NULL OR s.id = $4)
ORDER BY s.id
