SELECT e.id, e.contact_id, c.email, e.name, e.data, e.created_at
FROM events e
JOIN contacts c ON c.project_id = e.project_id AND c.id = e.contact_id
WHERE e.project_id = $1
  AND ($2::uuid IS NULL OR EXISTS (
      SELECT 1 FROM contact_sites cs
       WHERE cs.contact_id = e.contact_id AND cs.site_id = $2))
  AND ($3::uuid IS NULL OR e.contact_id = $3)
  AND ($4::text IS NULL OR e.name = $4)
  AND ($5::timestamptz IS NULL OR e.created_at >= $5)
  AND ($6::timestamptz IS NULL OR e.created_at < $6)
  AND ($7::uuid IS NULL OR e.id < $7)
ORDER BY e.id DESC LIMIT $8
