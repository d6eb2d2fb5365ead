INSERT INTO campaign_steps (id, project_id, campaign_id, step_order, delay_minutes,
  subject, html, text_body, template_id)
SELECT uuid_v7(), project_id, $3, step_order, delay_minutes, subject, html, text_body,
  template_id
FROM campaign_steps WHERE project_id = $1 AND campaign_id = $2 ORDER BY step_order
