INSERT INTO outbound_events (id, project_id, type, data)
SELECT uuid_v7(), c.project_id, 'contact.unsubscribed', jsonb_build_object(
  'contact_id', c.id, 'email', c.email, 'site_id', NULL,
  'unsubscribed_at', export_ts(now()))
FROM contacts c WHERE c.project_id = $1 AND c.email = $2
