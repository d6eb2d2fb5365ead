SELECT
  (SELECT count(*) FROM contact_sites WHERE contact_id = $2) AS subscriptions,
  (SELECT count(*) FROM enrollments WHERE project_id = $1 AND contact_id = $2)
      AS enrollments,
  (SELECT count(*) FROM events WHERE project_id = $1 AND contact_id = $2) AS events,
  (SELECT count(*) FROM email_events
    WHERE project_id = $1 AND email_log_id = ANY($4)) AS email_events,
  (SELECT count(*) FROM webhook_receipts WHERE email_log_id = ANY($4))
      AS webhook_receipts,
  (SELECT count(*) FROM conversions WHERE project_id = $1 AND contact_id = $2)
      AS conversions,
  (SELECT count(*) {IDEMPOTENT_ANSWERS}) AS idempotency_records
