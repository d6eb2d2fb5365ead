SELECT count(*) FILTER (WHERE last >= $3::timestamptz - interval '7 days') AS last_7_days,
       count(*) FILTER (WHERE last < $3 - interval '7 days'
                          AND last >= $3 - interval '30 days') AS last_30_days,
       count(*) FILTER (WHERE last < $3 - interval '30 days'
                          AND last >= $3 - interval '90 days') AS last_90_days,
       count(*) FILTER (WHERE last < $3 - interval '90 days') AS over_90_days,
       count(*) FILTER (WHERE last IS NULL AND emailed) AS never_engaged,
       count(*) FILTER (WHERE NOT emailed) AS never_emailed
FROM (
    SELECT (SELECT max(greatest(l.last_opened_at, l.last_clicked_at))
              FROM email_log l
             WHERE l.contact_id = c.id AND l.project_id = $1
               AND ($2::uuid IS NULL OR l.site_id = $2)) AS last,
           EXISTS (SELECT 1 FROM email_log l
                    WHERE l.contact_id = c.id AND l.project_id = $1
                      AND ($2::uuid IS NULL OR l.site_id = $2)) AS emailed
      FROM contacts c
     WHERE c.project_id = $1
       AND ($2::uuid IS NULL OR EXISTS (
           SELECT 1 FROM contact_sites cs
            WHERE cs.contact_id = c.id AND cs.site_id = $2))) x
