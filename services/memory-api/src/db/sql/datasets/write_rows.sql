INSERT INTO dataset_rows (id, dataset_id, row_key, data)
SELECT w.id, $1, w.row_key, w.data
FROM unnest($2::uuid[], $3::text[], $4::jsonb[]) AS w (id, row_key, data)
ON CONFLICT (dataset_id, row_key)
DO UPDATE SET data = EXCLUDED.data, updated_at = now()
RETURNING (xmax = 0) AS inserted
