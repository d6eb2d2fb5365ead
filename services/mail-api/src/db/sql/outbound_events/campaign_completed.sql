INSERT INTO outbound_events (id, project_id, type, data)
SELECT $3, c.project_id, 'campaign.completed', jsonb_build_object(
  'campaign_id', c.id, 'name', c.name, 'site_id', c.site_id, 'type', c.type,
  'completed_at', export_ts(coalesce(c.completed_at, now())),
  'enrollments', (SELECT jsonb_build_object(
      'completed', count(*) FILTER (WHERE e.status = 'completed'),
      'exited', count(*) FILTER (WHERE e.status = 'exited'))
    FROM enrollments e WHERE e.campaign_id = c.id))
FROM campaigns c WHERE c.project_id = $1 AND c.id = $2
