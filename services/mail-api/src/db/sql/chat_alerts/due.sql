SELECT a.project_id, a.url_sealed, a.after_event FROM chat_alerts a
WHERE (a.last_sent_at IS NULL OR a.last_sent_at <= now() - make_interval(secs => $1))
  AND EXISTS (SELECT 1 FROM outbound_events e WHERE e.project_id = a.project_id
        AND e.type = ANY($2) AND e.id > a.after_event)
ORDER BY a.project_id LIMIT $3 FOR UPDATE OF a SKIP LOCKED
