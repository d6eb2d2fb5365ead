INSERT INTO idempotency_keys (project_id, route, key, request_hash)
VALUES ($1, $2, $3, $4)
ON CONFLICT (project_id, route, key) DO UPDATE
  SET request_hash = EXCLUDED.request_hash, response_status = NULL,
      response_body = NULL, created_at = now()
  WHERE idempotency_keys.created_at < now() - interval '24 hours'
