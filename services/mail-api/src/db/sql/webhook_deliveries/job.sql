SELECT d.subscription_id, d.status, d.attempts, s.url, s.secret_sealed,
  CASE WHEN s.previous_expires_at > now() THEN s.previous_secret_sealed END
    AS previous_secret_sealed,
  e.type AS event_type, e.data, e.created_at AS event_created_at
FROM webhook_deliveries d
JOIN webhook_subscriptions s ON s.id = d.subscription_id
JOIN outbound_events e ON e.id = d.event_id
WHERE d.project_id = $1 AND d.id = $2
