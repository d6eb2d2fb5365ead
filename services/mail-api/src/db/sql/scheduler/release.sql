WITH picked AS (
  SELECT e.id FROM email_log e
  WHERE e.site_id = $1 AND e.held_until <= $2 AND e.status = 'queued'
    AND EXISTS (SELECT 1 FROM campaigns c
                WHERE c.id = e.campaign_id AND c.status = 'active')
  ORDER BY e.held_until, e.id LIMIT $3
  FOR UPDATE OF e SKIP LOCKED)
UPDATE email_log e SET held_until = NULL, hold_reason = NULL, updated_at = now()
FROM picked WHERE e.id = picked.id
RETURNING e.id, e.project_id
