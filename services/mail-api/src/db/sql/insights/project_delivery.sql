SELECT d.*, v.converted FROM (
    SELECT {DELIVERY_COUNTS} FROM email_log
     WHERE project_id = $1 AND created_at >= $2 AND created_at < $3
       AND ($4::uuid IS NULL OR site_id = $4)) d
CROSS JOIN (
    SELECT count(*) AS converted FROM conversions cv
     WHERE cv.project_id = $1 AND cv.attributed_at >= $2 AND cv.attributed_at < $3
       AND cv.email_log_id IS NOT NULL
       AND ($4::uuid IS NULL OR EXISTS (
           SELECT 1 FROM email_log l
            WHERE l.project_id = cv.project_id AND l.id = cv.email_log_id
              AND l.site_id = $4))) v
