SELECT * FROM (
  (SELECT id, 'event' AS kind, created_at AS at, name, data, NULL::text AS subject,
          NULL::text AS status, NULL::uuid AS campaign_id, NULL::float8 AS revenue,
          NULL::text AS currency
     FROM events WHERE project_id = $1 AND contact_id = $2
      AND ($3::uuid IS NULL OR id < $3) ORDER BY id DESC LIMIT $4)
  UNION ALL
  (SELECT id, 'email', created_at, NULL, NULL, subject, status, campaign_id, NULL, NULL
     FROM email_log WHERE project_id = $1 AND contact_id = $2
      AND ($3::uuid IS NULL OR id < $3) ORDER BY id DESC LIMIT $4)
  UNION ALL
  (SELECT id, 'conversion', attributed_at, event, metadata, NULL, NULL, campaign_id,
          revenue::float8, currency
     FROM conversions WHERE project_id = $1 AND contact_id = $2
      AND ($3::uuid IS NULL OR id < $3) ORDER BY id DESC LIMIT $4)
) AS entries ORDER BY id DESC LIMIT $4
