SELECT c.id, c.name, c.site_id, c.status, d.*, v.converted
FROM campaigns c
CROSS JOIN LATERAL (
    SELECT {DELIVERY_COUNTS} FROM email_log
     WHERE campaign_id = c.id AND project_id = $1
       AND created_at >= $2 AND created_at < $3) d
CROSS JOIN LATERAL (
    SELECT count(*) AS converted FROM conversions
     WHERE campaign_id = c.id AND project_id = $1
       AND attributed_at >= $2 AND attributed_at < $3) v
WHERE c.project_id = $1 AND ($4::uuid IS NULL OR c.site_id = $4) AND d.sent > 0
ORDER BY d.sent DESC, c.id LIMIT $5
