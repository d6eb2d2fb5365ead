SELECT r.id, r.job, r.started_at, r.finished_at, r.outcome,
       coalesce((SELECT jsonb_object_agg(c.what, c.count ORDER BY c.what)
                   FROM cron_run_counts c
                  WHERE c.run_id = r.id AND c.project_id = $1), '{}'::jsonb) AS counts
FROM cron_runs r
WHERE ($2::text IS NULL OR r.job = $2)
  AND ($3::uuid IS NULL OR r.id < $3)
  AND (r.job = ANY($5) OR r.outcome <> 'ok'
       OR EXISTS (SELECT 1 FROM cron_run_counts c
                   WHERE c.run_id = r.id AND c.project_id = $1))
ORDER BY r.id DESC LIMIT $4
