SELECT t.id, t.project_id
FROM ab_tests t
WHERE t.status = 'running'
  AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = t.campaign_id AND c.status = 'active')
  AND EXISTS (SELECT 1 FROM enrollments e
              WHERE e.campaign_id = t.campaign_id AND e.status = 'active'
                AND e.current_step = 0
                AND NOT EXISTS (SELECT 1 FROM ab_assignments a
                                WHERE a.test_id = t.id AND a.enrollment_id = e.id))
ORDER BY t.id
LIMIT $1
FOR UPDATE OF t SKIP LOCKED
