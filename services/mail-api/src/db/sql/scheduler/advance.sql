WITH due AS (
  SELECT e.id, e.project_id, e.campaign_id, e.contact_id, e.current_step
  FROM enrollments e
  WHERE e.status = 'active' AND e.next_step_at <= now()
    AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = e.campaign_id AND c.status = 'active')
    -- A running A/B test places each enrollment before its first step.
    AND NOT EXISTS (SELECT 1 FROM ab_tests t
                    WHERE t.campaign_id = e.campaign_id AND t.status = 'running'
                      AND e.current_step = 0
                      AND NOT EXISTS (SELECT 1 FROM ab_assignments a
                                      WHERE a.test_id = t.id AND a.enrollment_id = e.id))
  ORDER BY e.next_step_at LIMIT $1
  FOR UPDATE OF e SKIP LOCKED),
content AS (
  SELECT d.id, d.project_id, d.campaign_id, d.contact_id, c.site_id, ct.email,
         s.id AS step_id,
         coalesce(ab.variant ->> 'subject', s.subject) AS subject,
         coalesce(ab.variant ->> 'html', s.html, t.html, '') AS html, s.text_body,
         ab.variant ->> 'from_name' AS from_name, ab.idx AS ab_variant,
         -- Held back by a running test: waits for the winner.
         (abt.id IS NOT NULL AND ab.idx IS NULL) AS held_back,
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
  LEFT JOIN templates t ON t.project_id = s.project_id AND t.id = s.template_id
  LEFT JOIN ab_tests abt ON abt.campaign_id = d.campaign_id AND abt.step_id = s.id
  LEFT JOIN ab_assignments aa ON aa.test_id = abt.id AND aa.enrollment_id = d.id
  LEFT JOIN LATERAL (
    SELECT coalesce(aa.variant, abt.winner) AS idx,
           abt.variants -> coalesce(aa.variant, abt.winner)::int AS variant) ab
    ON abt.id IS NOT NULL),
work AS (
  SELECT w.*,
         CASE WHEN w.subject || w.html || coalesce(w.text_body, '') ~ '[{][{%#]'
              THEN '{}'::jsonb END AS template_data
  FROM content w),
written AS (
  INSERT INTO email_log (id, project_id, site_id, contact_id, campaign_id, to_email,
    subject, status, html, text_body, enrollment_id, step_id, hold_reason, held_until,
    template_data, from_name, ab_variant)
  SELECT uuid_v7(), project_id, site_id, contact_id, campaign_id, email, subject,
    'queued', html, text_body, id, step_id, 'scheduled', '-infinity', template_data,
    from_name, ab_variant
  FROM work WHERE blocked IS NULL AND step_id IS NOT NULL AND NOT held_back
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
      + CASE WHEN w.blocked IS NULL AND w.step_id IS NOT NULL AND NOT w.held_back
             THEN 1 ELSE 0 END,
    status = CASE WHEN w.blocked IS NOT NULL THEN 'exited'
                  WHEN w.step_id IS NULL THEN 'completed' ELSE 'active' END,
    exit_reason = w.blocked,
    next_step_at = CASE WHEN w.blocked IS NULL AND w.step_id IS NOT NULL
                         AND NOT w.held_back AND n.id IS NULL THEN now() END,
    ended_at = CASE WHEN w.blocked IS NOT NULL OR w.step_id IS NULL THEN now() END,
    updated_at = now()
  FROM work w LEFT JOIN written n ON n.enrollment_id = w.id
  WHERE e.id = w.id
  RETURNING e.status)
SELECT count(*) FILTER (WHERE status = 'active') AS scheduled,
       count(*) FILTER (WHERE status = 'completed') AS completed,
       count(*) FILTER (WHERE status = 'exited') AS exited
FROM moved
