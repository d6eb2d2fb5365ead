SELECT count(*) AS count
FROM contact_sites cs JOIN contacts c ON c.id = cs.contact_id
WHERE cs.site_id = $2 AND cs.status = 'subscribed' AND c.project_id = $1
  AND NOT EXISTS (SELECT 1 FROM suppressions s
                  WHERE s.project_id = $1 AND s.email = c.email)
