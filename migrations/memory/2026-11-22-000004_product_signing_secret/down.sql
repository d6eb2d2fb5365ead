ALTER TABLE products DROP COLUMN signing_secret_rotated_at;
ALTER TABLE products DROP COLUMN signing_secret;
