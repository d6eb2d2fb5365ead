SELECT s.campaign_id, s.id, s.step_order, s.subject, d.*, u.unsubscribed,
       v.conversions, v.revenue
FROM campaign_steps s
CROSS JOIN LATERAL (
    SELECT {DELIVERY_COUNTS} FROM email_log
     WHERE step_id = s.id AND project_id = $1
       AND created_at >= $2 AND created_at < $3) d
CROSS JOIN LATERAL (
    SELECT count(DISTINCT l.id) AS unsubscribed
    FROM email_log l JOIN email_events ev ON ev.email_log_id = l.id
    WHERE l.step_id = s.id AND l.project_id = $1 AND ev.kind = 'unsubscribed'
      AND l.created_at >= $2 AND l.created_at < $3) u
CROSS JOIN LATERAL (
    SELECT coalesce(sum(n), 0)::int8 AS conversions,
           coalesce(jsonb_object_agg(currency, amount), '{}') AS revenue
    FROM (SELECT c.currency, count(*) AS n, sum(c.revenue)::float8 AS amount
            FROM conversions c JOIN email_log l ON l.id = c.email_log_id
           WHERE l.step_id = s.id AND c.project_id = $1
             AND c.attributed_at >= $2 AND c.attributed_at < $3
           GROUP BY c.currency) per_currency) v
WHERE s.project_id = $1 AND s.campaign_id = ANY($4)
ORDER BY s.campaign_id, s.step_order
