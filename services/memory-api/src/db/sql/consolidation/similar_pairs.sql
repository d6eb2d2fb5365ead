WITH wanted AS (SELECT * FROM unnest($3::text[], $4::uuid[]) AS w(kind, id)),
items AS (
    SELECT 'decision' AS kind, d.id, d.embedding FROM decisions d
    JOIN wanted w ON w.kind = 'decision' AND w.id = d.id
    WHERE d.user_id = $1 AND d.environment = $2 AND d.embedding IS NOT NULL
    UNION ALL
    SELECT 'corpus', f.id, f.embedding FROM free_form_entries f
    JOIN wanted w ON w.kind = 'corpus' AND w.id = f.id
    WHERE f.user_id = $1 AND f.environment = $2 AND f.embedding IS NOT NULL
)
SELECT a.kind AS a_kind, a.id AS a_id, b.kind AS b_kind, b.id AS b_id,
       (1 - (a.embedding <=> b.embedding))::float8 AS similarity
FROM items a JOIN items b ON (a.kind, a.id) < (b.kind, b.id)
WHERE 1 - (a.embedding <=> b.embedding) >= $5
