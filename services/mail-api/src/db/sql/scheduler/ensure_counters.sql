WITH site AS (SELECT s.project_id, p.plan FROM sites s
              JOIN projects p ON p.id = s.project_id WHERE s.id = $1),
d AS (INSERT INTO site_daily_sends (site_id, day) SELECT $1, $2 FROM site
      ON CONFLICT DO NOTHING),
m AS (INSERT INTO project_minute_sends (project_id, minute)
      SELECT project_id, $3 FROM site ON CONFLICT DO NOTHING),
mo AS (INSERT INTO project_monthly_sends (project_id, month)
       SELECT project_id, date_trunc('month', now() AT TIME ZONE 'UTC')::date FROM site
       ON CONFLICT DO NOTHING)
SELECT 1 FROM site
