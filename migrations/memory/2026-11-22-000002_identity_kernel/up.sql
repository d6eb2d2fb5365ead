-- The identity kernel: one JSON object per user and environment, versioned for If-Match. The
-- injection block and its token count are rendered on write, so a read is one row.
CREATE TABLE identity_kernels (
    user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    environment      text NOT NULL CHECK (environment IN ('live', 'test')),
    kernel           jsonb NOT NULL CHECK (jsonb_typeof(kernel) = 'object'),
    injection_block  text,
    token_count      integer NOT NULL CHECK (token_count >= 0),
    version          integer NOT NULL CHECK (version > 0),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, environment)
);
