UPDATE campaigns c SET status = 'completed', completed_at = now(), updated_at = now()
WHERE c.status = 'active' AND NOT c.accepts_new_contacts
  AND NOT EXISTS (SELECT 1 FROM enrollments e
                  WHERE e.campaign_id = c.id AND e.status = 'active')
RETURNING c.project_id, c.id
