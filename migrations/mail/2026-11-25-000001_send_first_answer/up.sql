-- POST /send answered 202 `queued`: a replay of the request's idempotency key answers that
-- again, whatever the email became since (as ruled for idempotency keys).
ALTER TABLE email_log ADD COLUMN answered_queued boolean NOT NULL DEFAULT false;
