-- The statement `scripts/bench.sh` compares the route with (scenario w writes the same rows
-- through it, with its arrays built by `generate_series`).
INSERT INTO producer_signals AS s (id, user_id, environment,
    workspace_id, source, entity_scope, entity_id, signal_type, dedup_key, severity, title,
    description, payload, evidence, related_decisions, confidence_score,
    collapse_window_minutes, count)
SELECT r.id, $1, $2,
    coalesce($3, (SELECT w.active_workspace_id FROM workspace_scopes w
                  WHERE w.key_id = $19)),
    r.source, r.entity_scope, r.entity_id, r.signal_type,
    r.dedup_key, r.severity, r.title, r.description, r.payload::jsonb, r.evidence::jsonb,
    r.related::uuid[], r.confidence, r.win, r.n
FROM unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
    $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
    $16::float8[], $17::int4[], $18::int4[]) WITH ORDINALITY
    AS r(id, source, entity_scope, entity_id, signal_type, dedup_key, severity, title,
         description, payload, evidence, related, confidence, win, n, ord)
ORDER BY r.ord
ON CONFLICT (user_id, environment, dedup_key) WHERE open DO UPDATE
    SET count = s.count + excluded.count, last_seen_at = excluded.last_seen_at
    WHERE s.last_seen_at >= excluded.last_seen_at
        - make_interval(mins => excluded.collapse_window_minutes)
RETURNING s.id, s.dedup_key
