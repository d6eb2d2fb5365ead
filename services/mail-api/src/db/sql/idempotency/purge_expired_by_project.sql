WITH deleted AS (
    DELETE FROM idempotency_keys WHERE ctid IN (
        SELECT ctid FROM idempotency_keys
        WHERE created_at < now() - interval '24 hours' LIMIT $1)
    RETURNING project_id)
SELECT project_id, count(*) AS n FROM deleted GROUP BY project_id
