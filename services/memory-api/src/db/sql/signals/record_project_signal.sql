INSERT INTO project_signals (id, user_id, environment, product_id, event_type,
    title, severity, body, external_id, received_via)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (product_id, external_id) WHERE external_id IS NOT NULL DO NOTHING
RETURNING id
