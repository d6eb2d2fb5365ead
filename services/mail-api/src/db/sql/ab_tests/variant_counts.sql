SELECT a.variant AS variant,
       count(*) FILTER (WHERE e.sent_at IS NOT NULL) AS recipients,
       count(*) FILTER (WHERE e.sent_at IS NOT NULL AND CASE $4
         WHEN 'opens' THEN e.open_count > 0
         WHEN 'clicks' THEN cardinality(e.clicked_urls) > 0
         ELSE EXISTS (SELECT 1 FROM conversions v
                      WHERE v.project_id = e.project_id AND v.email_log_id = e.id) END)
         AS successes
FROM ab_assignments a
JOIN email_log e
  ON e.project_id = a.project_id AND e.enrollment_id = a.enrollment_id AND e.step_id = $3
WHERE a.test_id = $1 AND a.project_id = $2 AND a.variant IS NOT NULL
GROUP BY a.variant
