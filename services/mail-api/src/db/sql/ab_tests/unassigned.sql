SELECT e.id AS enrollment_id, e.contact_id
FROM enrollments e
WHERE e.project_id = $1 AND e.campaign_id = $2 AND e.status = 'active' AND e.current_step = 0
  AND NOT EXISTS (SELECT 1 FROM ab_assignments a
                  WHERE a.test_id = $3 AND a.enrollment_id = e.id)
ORDER BY e.id
LIMIT $4
