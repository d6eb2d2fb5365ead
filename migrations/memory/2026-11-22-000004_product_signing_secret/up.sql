-- The HMAC secret of signed project signals, sealed with the key-encryption key (AES-256-GCM);
-- shown in plaintext only when created or rotated.
ALTER TABLE products ADD COLUMN signing_secret bytea;
ALTER TABLE products ADD COLUMN signing_secret_rotated_at timestamptz;
