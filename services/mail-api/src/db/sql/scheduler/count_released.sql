WITH d AS (UPDATE site_daily_sends SET sends = sends + $4 WHERE site_id = $1 AND day = $2),
m AS (UPDATE project_minute_sends SET sends = sends + $4
      WHERE project_id = $5 AND minute = $3)
UPDATE project_monthly_sends SET sends = sends + $4
WHERE project_id = $5 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
