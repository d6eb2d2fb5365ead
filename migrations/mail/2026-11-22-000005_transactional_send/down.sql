DROP TABLE webhook_receipts;
DROP TABLE project_monthly_sends;
DROP TABLE outbox;
DROP TABLE email_events;
DROP INDEX email_log_project_status_idx;
DROP INDEX email_log_idempotency_idx;
DELETE FROM email_log WHERE status IN ('failed', 'suppressed');
ALTER TABLE email_log DROP CONSTRAINT email_log_status_check;
ALTER TABLE email_log ADD CONSTRAINT email_log_status_check CHECK (status IN (
    'accepted', 'queued', 'sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained'));
ALTER TABLE email_log
    DROP COLUMN html, DROP COLUMN text_body, DROP COLUMN reply_to, DROP COLUMN headers,
    DROP COLUMN tags, DROP COLUMN tracking, DROP COLUMN idempotency_key,
    DROP COLUMN request_hash, DROP COLUMN attempts, DROP COLUMN last_error,
    DROP COLUMN provider, DROP COLUMN updated_at;
DROP TABLE project_delivery;
