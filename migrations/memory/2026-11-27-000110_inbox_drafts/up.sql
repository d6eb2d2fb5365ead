-- Stored draft replies for mail threads, one set per thread of one mail account of an owner.
-- Thread and message ids are hexadecimal, stored lowercase without leading zeros.
CREATE TABLE inbox_draft_threads (
    id                 uuid PRIMARY KEY,
    user_id            uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment        text NOT NULL CHECK (environment IN ('live', 'test')),
    account_email      text NOT NULL CHECK (char_length(account_email) BETWEEN 1 AND 320),
    thread_id          text NOT NULL CHECK (thread_id ~ '^[0-9a-f]{1,64}$'),
    latest_message_id  text NOT NULL CHECK (latest_message_id ~ '^[0-9a-f]{1,64}$'),
    latest_message_at  timestamptz NOT NULL,
    generated_at       timestamptz NOT NULL,
    why                text NOT NULL CHECK (char_length(why) <= 2000),
    drafts             jsonb NOT NULL CHECK (jsonb_typeof(drafts) = 'array'),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, environment, account_email, thread_id)
);
