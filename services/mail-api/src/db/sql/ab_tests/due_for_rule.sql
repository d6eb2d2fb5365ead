UPDATE ab_tests SET checked_at = now()
WHERE id IN (SELECT id FROM ab_tests
             WHERE status = 'running' AND auto_promote
               AND (checked_at IS NULL OR checked_at < now() - make_interval(secs => $2))
             ORDER BY checked_at NULLS FIRST, id
             LIMIT $1
             FOR UPDATE SKIP LOCKED)
RETURNING project_id, id
