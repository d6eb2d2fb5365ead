SELECT g.tag, g.contacts, g.sent, g.delivered, g.opened, g.clicked, g.bounced,
       g.complained
FROM (SELECT t.tag, count(DISTINCT contact_id) AS contacts, {DELIVERY_COUNTS}
        FROM email_log
        CROSS JOIN LATERAL unnest((
            SELECT c.tags FROM contacts c
             WHERE c.project_id = $1 AND c.id = email_log.contact_id)) AS t(tag)
       WHERE project_id = $1 AND created_at >= $2 AND created_at < $3
         AND ($4::uuid IS NULL OR site_id = $4)
       GROUP BY t.tag) g
WHERE g.sent >= $5
ORDER BY g.opened::float8 / g.sent DESC, g.clicked::float8 / g.sent DESC,
         g.sent DESC, g.tag LIMIT $6
