SELECT c.id, c.name, c.site_id, c.type AS kind, c.status,
       (SELECT count(*) FROM enrollments e
         WHERE e.campaign_id = c.id AND e.status <> 'exited') AS enrolled,
       d.*, v.conversions, v.revenue
FROM campaigns c
CROSS JOIN LATERAL (
    SELECT {DELIVERY_COUNTS} FROM email_log
     WHERE campaign_id = c.id AND project_id = $1
       AND created_at >= $2 AND created_at < $3) d
CROSS JOIN LATERAL (
    SELECT coalesce(sum(n), 0)::int8 AS conversions,
           coalesce(jsonb_object_agg(currency, amount), '{}') AS revenue
    FROM (SELECT currency, count(*) AS n, sum(revenue)::float8 AS amount
            FROM conversions
           WHERE campaign_id = c.id AND project_id = $1
             AND attributed_at >= $2 AND attributed_at < $3
           GROUP BY currency) per_currency) v
WHERE c.project_id = $1
  AND ($4::uuid IS NULL OR c.site_id = $4)
  AND ($5::text IS NULL OR c.status = $5)
  AND ($6::uuid IS NULL OR c.id > $6)
ORDER BY c.id LIMIT $7
