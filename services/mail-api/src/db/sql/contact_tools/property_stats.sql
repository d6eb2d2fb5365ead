WITH stats AS (
  SELECT p.key AS name, jsonb_typeof(p.value) AS json_type, count(*) AS count
    FROM contacts c
    JOIN contact_sites cs ON cs.contact_id = c.id AND cs.site_id = $2
    CROSS JOIN LATERAL jsonb_each(c.properties) AS p
   WHERE c.project_id = $1
   GROUP BY 1, 2),
kept AS (SELECT DISTINCT name FROM stats ORDER BY name LIMIT $3)
SELECT name, json_type, count FROM stats WHERE name IN (SELECT name FROM kept)
ORDER BY name, json_type
