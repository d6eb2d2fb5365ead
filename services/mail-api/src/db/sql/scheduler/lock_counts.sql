SELECT s.project_id, p.plan,
  (SELECT sends::int8 FROM site_daily_sends WHERE site_id = $1 AND day = $2
   FOR UPDATE) AS today,
  (SELECT sends::int8 FROM project_minute_sends
   WHERE project_id = s.project_id AND minute = $3 FOR UPDATE) AS this_minute,
  (SELECT sends FROM project_monthly_sends WHERE project_id = s.project_id
     AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date FOR UPDATE)
    AS this_month
FROM sites s JOIN projects p ON p.id = s.project_id WHERE s.id = $1
