SELECT
  (SELECT count(*) FROM events WHERE project_id = $1 AND contact_id = ANY($2)) AS events,
  (SELECT count(*) FROM email_log WHERE project_id = $1 AND contact_id = ANY($2))
     AS emails,
  (SELECT count(*) FROM conversions WHERE project_id = $1 AND contact_id = ANY($2))
     AS conversions,
  (SELECT count(*) FROM enrollments WHERE project_id = $1 AND contact_id = ANY($2))
     AS enrollments,
  (SELECT count(*) FROM contact_sites cs JOIN contacts c ON c.id = cs.contact_id
    WHERE c.project_id = $1 AND cs.contact_id = ANY($2)) AS subscriptions
