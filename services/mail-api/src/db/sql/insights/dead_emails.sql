SELECT id, site_id, contact_id, campaign_id, to_email, subject,
       CASE WHEN status = 'failed' THEN 'failed' ELSE 'retrying' END AS state,
       attempts, last_error, provider, created_at, updated_at
FROM email_log
WHERE project_id = $1
  AND ((status = 'failed' AND ($3::text IS NULL OR $3 = 'failed'))
    OR (status IN ('accepted', 'queued') AND last_error IS NOT NULL
        AND ($3::text IS NULL OR $3 = 'retrying')))
  AND ($2::uuid IS NULL OR site_id = $2)
  AND ($4::uuid IS NULL OR id < $4)
ORDER BY id DESC LIMIT $5
