INSERT INTO enrollments (id, project_id, campaign_id, contact_id, source, event_id,
  next_step_at)
SELECT uuid_v7(), $1, $2, c.id, $4, $5, {FIRST_DUE}
FROM contact_sites cs JOIN contacts c ON c.id = cs.contact_id
WHERE cs.site_id = $3 AND cs.status = 'subscribed' AND c.project_id = $1
  AND ($6::uuid[] IS NULL OR c.id = ANY($6))
  AND NOT EXISTS (SELECT 1 FROM suppressions s
                  WHERE s.project_id = $1 AND s.email = c.email)
ORDER BY c.id
ON CONFLICT (campaign_id, contact_id) WHERE status <> 'exited' DO NOTHING
