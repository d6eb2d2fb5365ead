INSERT INTO outbound_events (id, project_id, type, data)
SELECT $3, project_id, $4, jsonb_build_object(
  'email_log_id', id, 'to', to_email, 'site_id', site_id, 'campaign_id', campaign_id,
  'provider_message_id', provider_message_id, 'occurred_at', export_ts(now())) || $5
FROM email_log WHERE project_id = $1 AND id = $2
