DROP TRIGGER email_log_deleted ON email_log;
DROP FUNCTION delete_events_of_deleted_emails();
DELETE FROM email_events e
WHERE NOT EXISTS (SELECT 1 FROM email_log l WHERE l.project_id = e.project_id AND l.id = e.email_log_id);
ALTER TABLE email_events ADD CONSTRAINT email_events_project_id_email_log_id_fkey
    FOREIGN KEY (project_id, email_log_id) REFERENCES email_log (project_id, id) ON DELETE CASCADE;
