UPDATE enrollments e SET next_step_at = now(), updated_at = now()
FROM ab_assignments a
WHERE a.test_id = $1 AND a.project_id = $2 AND a.variant IS NULL
  AND e.project_id = a.project_id AND e.id = a.enrollment_id
  AND e.status = 'active' AND e.current_step = 0
