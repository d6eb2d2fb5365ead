ALTER TABLE outbox ADD CONSTRAINT outbox_project_id_fkey
    FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE;
ALTER TABLE email_events ADD CONSTRAINT email_events_project_id_fkey
    FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE;
ALTER TABLE email_log ADD CONSTRAINT email_log_campaign_id_fkey
    FOREIGN KEY (campaign_id) REFERENCES campaigns (id) ON DELETE SET NULL;
ALTER TABLE email_log ADD CONSTRAINT email_log_contact_id_fkey
    FOREIGN KEY (contact_id) REFERENCES contacts (id) ON DELETE SET NULL;
ALTER TABLE email_log ADD CONSTRAINT email_log_site_id_fkey
    FOREIGN KEY (site_id) REFERENCES sites (id) ON DELETE CASCADE;
ALTER TABLE email_log ADD CONSTRAINT email_log_project_id_fkey
    FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE;
