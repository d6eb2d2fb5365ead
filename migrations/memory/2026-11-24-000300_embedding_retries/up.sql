-- The background embedding pass records why a row could not be embedded and when to try it
-- again (exponential backoff), so one input the provider refuses is set aside instead of
-- being retried with its batch forever.
ALTER TABLE decisions
    ADD COLUMN embed_error text,
    ADD COLUMN embed_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN embed_retry_at timestamptz;
ALTER TABLE free_form_entries
    ADD COLUMN embed_error text,
    ADD COLUMN embed_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN embed_retry_at timestamptz;
ALTER TABLE product_states
    ADD COLUMN embed_error text,
    ADD COLUMN embed_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN embed_retry_at timestamptz;
