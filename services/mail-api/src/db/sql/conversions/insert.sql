INSERT INTO conversions (id, project_id, contact_id, email_log_id, campaign_id, event,
                         revenue, currency, order_id, metadata, attribution,
                         attributed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8, $9, $10, $11, $12)
ON CONFLICT (project_id, order_id) DO NOTHING
RETURNING id, contact_id, email_log_id, campaign_id, event, revenue::float8 AS revenue,
          currency, order_id, attribution, attributed_at
