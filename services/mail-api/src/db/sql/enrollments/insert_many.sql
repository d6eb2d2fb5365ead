INSERT INTO enrollments (id, project_id, campaign_id, contact_id, source, event_id,
  next_step_at)
SELECT uuid_v7(), $1, $2, c.id, $4, $5, {FIRST_DUE}
FROM contacts c WHERE c.project_id = $1 AND c.id = ANY($3)
ORDER BY c.id
ON CONFLICT (campaign_id, contact_id) WHERE status <> 'exited' DO NOTHING
RETURNING contact_id
