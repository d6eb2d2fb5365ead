ALTER TABLE email_log DROP COLUMN answered_queued;
