DROP INDEX email_log_claims_idx;
ALTER TABLE email_log DROP COLUMN claimed_at;
