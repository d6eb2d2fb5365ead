SELECT last_error AS error, coalesce(provider, '') AS provider, count(*) AS emails,
       max(updated_at) AS last_seen
FROM email_log
WHERE project_id = $1 AND site_id = $2 AND status = 'failed'
  AND created_at >= $3 AND last_error IS NOT NULL
GROUP BY 1, 2
ORDER BY emails DESC, last_seen DESC
LIMIT $4
