-- One page of a migration's contacts ($2: a JSON array of records), created or merged by
-- (project, email) in one statement: names kept when the page has none, properties merged,
-- tags added; each subscribed to the run's site ($3) with the platform's consent state (an
-- existing subscription only ever moves to unsubscribed). Rows `(created)`.
WITH page AS (
    SELECT * FROM jsonb_to_recordset($2::jsonb)
        AS r(id uuid, email text, first_name text, last_name text, properties jsonb,
             tags text[], subscribed boolean)
), upserted AS (
    INSERT INTO contacts AS c (id, project_id, email, first_name, last_name, properties, tags,
                               source, created_at, updated_at)
    SELECT p.id, $1, p.email, p.first_name, p.last_name, p.properties, p.tags, 'import',
           now(), now()
      FROM page p
    ON CONFLICT (project_id, email) DO UPDATE
       SET first_name = coalesce(EXCLUDED.first_name, c.first_name),
           last_name = coalesce(EXCLUDED.last_name, c.last_name),
           properties = c.properties || EXCLUDED.properties,
           tags = ARRAY(SELECT DISTINCT t FROM unnest(c.tags || EXCLUDED.tags) AS t ORDER BY t),
           updated_at = now()
    RETURNING c.id, c.email, (xmax = 0) AS created
), subscribed AS (
    INSERT INTO contact_sites AS s (contact_id, site_id, status, created_at, updated_at)
    SELECT u.id, $3, CASE WHEN p.subscribed THEN 'subscribed' ELSE 'unsubscribed' END,
           now(), now()
      FROM upserted u JOIN page p ON p.email = u.email
    ON CONFLICT (contact_id, site_id) DO UPDATE
       SET status = 'unsubscribed', updated_at = now()
     WHERE EXCLUDED.status = 'unsubscribed' AND s.status <> 'unsubscribed'
)
SELECT created FROM upserted
