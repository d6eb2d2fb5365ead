WITH due AS (
  SELECT e.id, e.project_id, e.campaign_id, e.contact_id, e.current_step
  FROM enrollments e
  WHERE e.status = 'active' AND e.next_step_at <= now()
    AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = e.campaign_id AND c.status = 'active')
  ORDER BY e.next_step_at LIMIT $1
  FOR UPDATE OF e SKIP LOCKED),
work AS (
  SELECT d.id, d.project_id, d.campaign_id, d.contact_id, c.site_id, ct.email,
         s.id AS step_id, s.subject, coalesce(s.html, t.html, '') AS html, s.text_body,
         CASE WHEN s.subject || coalesce(s.html, t.html, '') || coalesce(s.text_body, '')
                   ~ '[{][{%#]' THEN '{}'::jsonb END AS template_data,
         CASE WHEN EXISTS (SELECT 1 FROM suppressions x
                           WHERE x.project_id = d.project_id AND x.email = ct.email)
                THEN 'suppressed'
              WHEN EXISTS (SELECT 1 FROM contact_sites cs
                           WHERE cs.contact_id = d.contact_id AND cs.site_id = c.site_id
                             AND cs.status = 'unsubscribed')
                THEN 'unsubscribed' END AS blocked
  FROM due d
  JOIN campaigns c ON c.id = d.campaign_id
  JOIN contacts ct ON ct.id = d.contact_id
  LEFT JOIN campaign_steps s
    ON s.campaign_id = d.campaign_id AND s.step_order = d.current_step + 1
  LEFT JOIN templates t ON t.project_id = s.project_id AND t.id = s.template_id),
written AS (
  INSERT INTO email_log (id, project_id, site_id, contact_id, campaign_id, to_email,
    subject, status, html, text_body, enrollment_id, step_id, hold_reason, held_until,
    template_data)
  SELECT uuid_v7(), project_id, site_id, contact_id, campaign_id, email, subject,
    'queued', html, text_body, id, step_id, 'scheduled', '-infinity', template_data
  FROM work WHERE blocked IS NULL AND step_id IS NOT NULL
  ORDER BY id
  ON CONFLICT (enrollment_id, step_id) WHERE enrollment_id IS NOT NULL DO NOTHING
  RETURNING id, project_id, enrollment_id),
events AS (
  INSERT INTO email_events (id, project_id, email_log_id, kind, source, data)
  SELECT uuid_v7(), project_id, id, 'accepted', 'scheduler', 'null'::jsonb
  FROM written),
moved AS (
  UPDATE enrollments e SET
    current_step = e.current_step
      + CASE WHEN w.blocked IS NULL AND w.step_id IS NOT NULL THEN 1 ELSE 0 END,
    status = CASE WHEN w.blocked IS NOT NULL THEN 'exited'
                  WHEN w.step_id IS NULL THEN 'completed' ELSE 'active' END,
    exit_reason = w.blocked,
    next_step_at = CASE WHEN w.blocked IS NULL AND w.step_id IS NOT NULL
                         AND n.id IS NULL THEN now() END,
    ended_at = CASE WHEN w.blocked IS NOT NULL OR w.step_id IS NULL THEN now() END,
    updated_at = now()
  FROM work w LEFT JOIN written n ON n.enrollment_id = w.id
  WHERE e.id = w.id
  RETURNING e.status)
SELECT count(*) FILTER (WHERE status = 'active') AS scheduled,
       count(*) FILTER (WHERE status = 'completed') AS completed,
       count(*) FILTER (WHERE status = 'exited') AS exited
FROM moved
