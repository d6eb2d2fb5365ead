WITH RECURSIVE held AS (
  (SELECT site_id FROM email_log WHERE held_until IS NOT NULL ORDER BY site_id LIMIT 1)
  UNION ALL
  SELECT (SELECT e.site_id FROM email_log e
          WHERE e.held_until IS NOT NULL AND e.site_id > held.site_id
          ORDER BY e.site_id LIMIT 1)
  FROM held WHERE held.site_id IS NOT NULL)
SELECT site_id FROM held WHERE site_id IS NOT NULL
  AND EXISTS (SELECT 1 FROM email_log e
              WHERE e.site_id = held.site_id AND e.held_until <= $1)
