ALTER TABLE email_log RESET (fillfactor);
CREATE INDEX email_log_claims_idx ON email_log (claimed_at)
    WHERE claimed_at IS NOT NULL AND status IN ('accepted', 'queued');
DROP INDEX email_log_unsent_idx;
