INSERT INTO hygiene_audit (id, project_id, run_id, site_id, contact_id, email, action,
                           reason)
SELECT p.id, $1, $2, p.site_id, p.contact_id, p.email, p.action, p.reason
  FROM unnest($3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::text[], $8::text[])
    AS p(id, site_id, contact_id, email, action, reason)
