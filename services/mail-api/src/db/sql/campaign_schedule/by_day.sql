{PROJECTED}
SELECT date_trunc('day', p.due AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS at,
       p.campaign_id, c.name AS campaign_name, c.site_id, p.step_order, p.subject,
       count(*) AS emails
FROM projected p JOIN campaigns c ON c.id = p.campaign_id
WHERE p.due >= $3::date AT TIME ZONE 'UTC' AND p.due < $4::date AT TIME ZONE 'UTC'
GROUP BY 1, p.campaign_id, c.name, c.site_id, p.step_order, p.subject
ORDER BY 1, p.campaign_id, p.step_order
