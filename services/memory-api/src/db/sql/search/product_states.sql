SELECT p.name AS product_name, s.id, s.version, s.state, s.created_at,
       1 - (s.embedding <=> (SELECT $4::vector)) AS cosine,
       1 - (s.embedding_previous <=> (SELECT $5::vector)) AS previous_cosine,
       doc @@ q AS keyword_hit, ts_rank_cd(doc, q)::float8 AS keyword_rank
FROM products p
CROSS JOIN websearch_to_tsquery('english', $3) AS q
JOIN LATERAL (
    SELECT id, version, state, created_at, embedding, embedding_previous FROM product_states
    WHERE product_id = p.id ORDER BY version DESC LIMIT 1
) s ON true
CROSS JOIN LATERAL (
    SELECT jsonb_to_tsvector('english', s.state, '["string"]')
           || to_tsvector('simple', p.name) AS doc
) d
WHERE p.user_id = $1 AND p.environment = $2
