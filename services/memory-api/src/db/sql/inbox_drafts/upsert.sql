-- Freshness by message time: a stored set is replaced only by one whose latest message is
-- not older (and, for the same message time, generated no earlier).
INSERT INTO inbox_draft_threads AS t (id, user_id, environment, account_email, thread_id,
    latest_message_id, latest_message_at, generated_at, why, drafts)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (user_id, environment, account_email, thread_id) DO UPDATE SET
    latest_message_id = excluded.latest_message_id, latest_message_at = excluded.latest_message_at,
    generated_at = excluded.generated_at, why = excluded.why, drafts = excluded.drafts,
    updated_at = now()
WHERE (excluded.latest_message_at, excluded.generated_at) >= (t.latest_message_at, t.generated_at)
