UPDATE email_log SET hold_reason = 'scheduled' WHERE hold_reason = 'abuse_paused';
ALTER TABLE email_log DROP CONSTRAINT email_log_hold_reason_check;
ALTER TABLE email_log ADD CONSTRAINT email_log_hold_reason_check CHECK (hold_reason IN (
    'scheduled', 'warmup_cap', 'batch_limit', 'send_window', 'blackout_date',
    'monthly_quota', 'campaign_paused'));
DROP TABLE scheduler_leases;
DROP TABLE abuse_monitor_overrides;
DROP TABLE abuse_monitor;
