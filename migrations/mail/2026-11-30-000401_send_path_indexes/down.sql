CREATE INDEX email_log_project_status_idx ON email_log (project_id, status, id);
DROP INDEX email_log_project_trouble_idx;
CREATE INDEX email_log_contact_sent_idx ON email_log (contact_id, sent_at);
DROP INDEX email_log_contact_idx;
