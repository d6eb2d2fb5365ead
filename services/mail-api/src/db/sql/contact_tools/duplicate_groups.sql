SELECT email_identity(email) AS identity, array_agg(id ORDER BY id) AS ids
  FROM contacts c
 WHERE project_id = $1 AND ($2::uuid IS NULL OR EXISTS
       (SELECT 1 FROM contact_sites cs WHERE cs.contact_id = c.id AND cs.site_id = $2))
 GROUP BY 1 HAVING count(*) > 1 ORDER BY 1 LIMIT $3
