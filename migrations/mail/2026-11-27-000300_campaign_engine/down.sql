DROP TRIGGER enrollments_end_cancels_mail ON enrollments;
DROP FUNCTION cancel_held_mail_of_ended_enrollment();
DROP TRIGGER contact_sites_end_enrollments ON contact_sites;
DROP FUNCTION end_enrollments_of_unsubscribed();
DROP TRIGGER suppressions_end_enrollments ON suppressions;
DROP FUNCTION end_enrollments_of_suppressed();
DROP FUNCTION next_step_delay(uuid, integer);
DROP FUNCTION uuid_v7();

DROP TABLE outbound_events;
DROP TABLE project_minute_sends;
DROP TABLE site_daily_sends;
DROP TABLE site_warmups;
DROP TABLE site_send_policies;

DELETE FROM email_events WHERE source = 'scheduler';
ALTER TABLE email_events DROP CONSTRAINT email_events_source_check;
ALTER TABLE email_events ADD CONSTRAINT email_events_source_check
    CHECK (source IN ('api', 'worker', 'tracking', 'webhook'));
UPDATE email_log SET status = 'failed', last_error = 'cancelled' WHERE status = 'cancelled';
ALTER TABLE email_log DROP CONSTRAINT email_log_status_check;
ALTER TABLE email_log ADD CONSTRAINT email_log_status_check CHECK (status IN (
    'accepted', 'queued', 'sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained',
    'failed', 'suppressed'));
DROP INDEX email_log_step_idx;
DROP INDEX email_log_held_idx;
DROP INDEX email_log_enrollment_step_idx;
ALTER TABLE email_log
    DROP CONSTRAINT email_log_hold_check,
    DROP CONSTRAINT email_log_same_project_step,
    DROP CONSTRAINT email_log_same_project_enrollment,
    DROP COLUMN held_until,
    DROP COLUMN hold_reason,
    DROP COLUMN step_id,
    DROP COLUMN enrollment_id;

DROP INDEX enrollments_campaign_status_idx;
DROP INDEX enrollments_due_idx;
UPDATE enrollments SET source = 'manual' WHERE source IN ('segment', 'launch');
ALTER TABLE enrollments DROP CONSTRAINT enrollments_source_check;
ALTER TABLE enrollments ADD CONSTRAINT enrollments_source_check
    CHECK (source IN ('signup', 'event', 'manual'));
ALTER TABLE enrollments
    DROP CONSTRAINT enrollments_exit_check,
    DROP CONSTRAINT enrollments_project_id_id_key,
    DROP COLUMN ended_at,
    DROP COLUMN exit_reason,
    DROP COLUMN next_step_at,
    DROP COLUMN current_step;

DROP TABLE campaign_steps;

DROP INDEX campaigns_closing_idx;
ALTER TABLE campaigns DROP COLUMN completed_at, DROP COLUMN accepts_new_contacts;

CREATE INDEX templates_project_idx ON templates (project_id, id);
ALTER TABLE templates DROP CONSTRAINT templates_project_id_id_key;
