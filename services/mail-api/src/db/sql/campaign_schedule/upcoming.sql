{PROJECTED}
SELECT date_trunc('hour', p.due) AS at, p.campaign_id, c.name AS campaign_name,
       c.site_id, p.step_order, p.subject, count(*) AS emails
FROM projected p JOIN campaigns c ON c.id = p.campaign_id
GROUP BY 1, p.campaign_id, c.name, c.site_id, p.step_order, p.subject
ORDER BY 1, p.campaign_id, p.step_order LIMIT $3
